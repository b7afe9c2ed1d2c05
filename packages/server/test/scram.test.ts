import { describe, expect, it } from 'vitest';
import { thrown } from '../../../test/helpers/thrown.js';
import {
  authMessage,
  clientFinal,
  deriveCredentials,
  parseClientFinal,
  parseClientFirst,
  ScramError,
  saltedPassword,
  serverFinal,
  serverFirst,
  verifyProof,
} from '../src/rethinkdb/scram.js';

// The test vector of the protocol spec (user admin, password "", salt 00..0f, i = 4096).
const SALT = Buffer.from([...Array(16).keys()]);
const CLIENT_FIRST_BARE = 'n=admin,r=abcdefghijklmnopqrstuvwx';
const SERVER_FIRST = 'r=abcdefghijklmnopqrstuvwxABCDEFGHIJKLMNOPQRSTUVWX,s=AAECAwQFBgcICQoLDA0ODw==,i=4096';
const CLIENT_FINAL =
  'c=biws,r=abcdefghijklmnopqrstuvwxABCDEFGHIJKLMNOPQRSTUVWX,p=HeodfewYjZjrJl0C8PVN06NhGY/xEWeh9w08wR2bF1k=';
const SERVER_FINAL = 'v=yFfyQotCTlt8G+gxUszwqkTOsHHgGqoWqHfb8BJoZno=';

const codeOf = (fn: () => unknown): number => thrown(fn, ScramError).errorCode;

describe('SCRAM-SHA-256 (RethinkDB flavour)', () => {
  it('matches the spec test vector', () => {
    expect(saltedPassword('', SALT, 4096).toString('hex')).toBe(
      'fd6e0f668c6d464b76592a4ab0e8e62d41e4bc8fcc4a3d5a3241d9586e1e19d8',
    );
    const creds = deriveCredentials('', SALT, 4096);
    expect(serverFirst('abcdefghijklmnopqrstuvwxABCDEFGHIJKLMNOPQRSTUVWX', creds)).toBe(SERVER_FIRST);
    const final = parseClientFinal(CLIENT_FINAL);
    const auth = authMessage(CLIENT_FIRST_BARE, SERVER_FIRST, final.withoutProof);
    expect(verifyProof(creds, auth, final.proof)).toBe(true);
    expect(serverFinal(creds, auth)).toBe(SERVER_FINAL);
  });

  it('treats a single NUL password (rethinkdb-ts) like the empty one', () => {
    expect(saltedPassword('\u0000', SALT, 4096).equals(saltedPassword('', SALT, 4096))).toBe(true);
  });

  it('rejects a proof made with another password', () => {
    const creds = deriveCredentials('right', SALT, 64);
    const { message } = clientFinal('wrong', SALT, 64, CLIENT_FIRST_BARE, SERVER_FIRST.replace('i=4096', 'i=64'));
    const final = parseClientFinal(message);
    expect(
      verifyProof(
        creds,
        authMessage(CLIENT_FIRST_BARE, SERVER_FIRST.replace('i=4096', 'i=64'), final.withoutProof),
        final.proof,
      ),
    ).toBe(false);
    const ok = clientFinal('right', SALT, 64, CLIENT_FIRST_BARE, SERVER_FIRST.replace('i=4096', 'i=64'));
    const okFinal = parseClientFinal(ok.message);
    const auth = authMessage(CLIENT_FIRST_BARE, SERVER_FIRST.replace('i=4096', 'i=64'), okFinal.withoutProof);
    expect(verifyProof(creds, auth, okFinal.proof)).toBe(true);
    expect(serverFinal(creds, auth)).toBe(ok.expectedServerFinal);
  });

  it('parses client-first messages and reports the reference error codes', () => {
    expect(parseClientFirst('n,,n=admin,r=nonce')).toEqual({ user: 'admin', nonce: 'nonce', bare: 'n=admin,r=nonce' });
    expect(parseClientFirst('n,,n=a=2Cb=3Dc,r=x').user).toBe('a,b=c');
    expect(codeOf(() => parseClientFirst('y,,n=admin,r=x'))).toBe(15);
    expect(codeOf(() => parseClientFirst('n,,n=admin,m=ext,r=x'))).toBe(11);
    expect(codeOf(() => parseClientFirst('n,,n=admin'))).toBe(10);
    expect(codeOf(() => parseClientFirst('n,,n=admin,r=x,r=y'))).toBe(10);
    expect(codeOf(() => parseClientFirst('n,,n=ad=ZZmin,r=x'))).toBe(18);
    expect(codeOf(() => parseClientFinal('c=eSws,r=x,p=AAAA'))).toBe(10);
    expect(codeOf(() => parseClientFinal('c=biws,r=x'))).toBe(10);
  });
});
