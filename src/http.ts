/** mneme's HTTP face: the Hono app and a server that runs it. */
export { createHttpApp, type HttpAppOptions } from './http/http-app.js';
export { type HttpServerOptions, type RunningHttpServer, startHttpServer } from './http/http-server.js';
