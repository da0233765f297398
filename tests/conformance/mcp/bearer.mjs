// Preload for the MCP conformance suite (`node --import bearer.mjs`).
//
// The suite has no option for an Authorization header, but every request to
// a commonroom room needs a session bearer. This adds
// `Authorization: Bearer $COMMONROOM_MCP_BEARER` to each request the suite
// makes, through the three paths it uses: the global `fetch`, undici's
// `request` (its raw DNS-rebinding probes) and `node:http`'s `request` (its
// raw header-validation probes), by wrapping `fetch`, the undici global
// dispatcher and `http.request`/`http.get`. A request that already carries an
// Authorization header is left alone. Test-only: loaded by
// tests/e2e/test_mcp_conformance.py.

import http from 'node:http';
import { getGlobalDispatcher, setGlobalDispatcher } from 'undici';

const token = process.env.COMMONROOM_MCP_BEARER;

function hasAuth(headers) {
  if (!headers) return false;
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) {
      return headers.some(([name]) => String(name).toLowerCase() === 'authorization');
    }
    for (let i = 0; i < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === 'authorization') return true;
    }
    return false;
  }
  if (typeof headers.has === 'function') return headers.has('authorization');
  return Object.keys(headers).some((name) => name.toLowerCase() === 'authorization');
}

function withAuth(headers, value) {
  if (hasAuth(headers)) return headers;
  if (!headers) return { authorization: value };
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) return [...headers, ['authorization', value]];
    return [...headers, 'authorization', value];
  }
  if (typeof headers.has === 'function') {
    const copy = new Headers(headers);
    copy.set('authorization', value);
    return copy;
  }
  return { ...headers, authorization: value };
}

if (token) {
  const value = `Bearer ${token}`;

  const base = getGlobalDispatcher();
  setGlobalDispatcher(
    base.compose((dispatch) => (opts, handler) => dispatch({ ...opts, headers: withAuth(opts.headers, value) }, handler)),
  );

  const originalFetch = globalThis.fetch;
  globalThis.fetch = (input, init = {}) => {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has('authorization')) headers.set('authorization', value);
    return originalFetch(input, { ...init, headers });
  };

  const originalRequest = http.request;
  const request = function (...args) {
    for (let i = 0; i < Math.min(args.length, 2); i++) {
      const arg = args[i];
      if (arg && typeof arg === 'object' && !(arg instanceof URL)) {
        args[i] = { ...arg, headers: withAuth(arg.headers, value) };
        return originalRequest.apply(this, args);
      }
    }
    const callback = typeof args[1] === 'function' ? [args[1]] : [];
    return originalRequest.call(this, args[0], { headers: { authorization: value } }, ...callback);
  };
  http.request = request;
  http.get = function (...args) {
    const req = request.apply(this, args);
    req.end();
    return req;
  };
}
