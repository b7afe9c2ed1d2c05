import { html, render } from 'htm/preact';
import { App } from './app.ts';
import './style.css';

const root = document.getElementById('app');
if (!root) throw new Error('#app is missing from index.html');
render(html`<${App} />`, root);
