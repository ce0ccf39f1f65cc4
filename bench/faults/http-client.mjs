// A minimal HTTP client for the fault suite: one new connection per request (no pool survives a
// kill -9), a total timeout per request, and every failure returned as data, never thrown.
import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';

/**
 * Sends one request and resolves with `{ status, headers, text, milliseconds }`, or with
 * `{ failure, milliseconds }` where failure is `timeout`, `refused`, `reset` or an error code.
 * `body` is a string or a Buffer, sent as is; `json` is serialised with a JSON content type.
 */
export function send(baseUrl, { method = 'GET', path = '/', headers = {}, body, json, timeoutMs = 10_000 }) {
  const started = performance.now();
  const url = new URL(path, baseUrl);
  if (url.hostname !== '127.0.0.1') throw new Error(`the fault suite talks only to 127.0.0.1, not ${url.hostname}`);
  const payload = json === undefined ? body : JSON.stringify(json);
  const allHeaders = { ...(json === undefined ? {} : { 'content-type': 'application/json' }), ...headers };
  if (payload !== undefined && !Object.keys(allHeaders).some((name) => name.toLowerCase() === 'content-length')) {
    allHeaders['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, milliseconds: performance.now() - started });
    };
    const outgoing = httpRequest(
      {
        host: '127.0.0.1',
        port: url.port,
        method,
        path: `${url.pathname}${url.search}`,
        headers: allHeaders,
        agent: false,
      },
      (incoming) => {
        const chunks = [];
        incoming.on('data', (chunk) => chunks.push(chunk));
        incoming.on('end', () =>
          finish({
            status: incoming.statusCode,
            headers: incoming.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        incoming.on('error', (error) => finish({ failure: failureName(error) }));
      },
    );
    const timer = setTimeout(() => {
      finish({ failure: 'timeout' });
      outgoing.destroy();
    }, timeoutMs);
    outgoing.on('error', (error) => finish({ failure: failureName(error) }));
    if (payload !== undefined) outgoing.write(payload);
    outgoing.end();
  });
}

function failureName(error) {
  if (error.code === 'ECONNREFUSED') return 'refused';
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || error.message === 'socket hang up') return 'reset';
  return error.code ?? error.message;
}

/** The response body as JSON, or undefined. */
export function jsonOf(response) {
  try {
    return JSON.parse(response.text);
  } catch {
    return undefined;
  }
}
