/**
 * Keys that name something on Object.prototype: a document, a term's options or a decoded
 * object holding one must be taken as data, never as a property lookup. The fuzz tests draw
 * keys from here.
 */
export const PROTOTYPE_KEYS = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'isPrototypeOf',
  'prototype',
];
