/**
 * mneme for the Vercel AI SDK 6: `wrapLanguageModel({ model, middleware: mnemeMiddleware({ mneme, viewer }) })`.
 * Needs the `ai` package (an optional peer dependency); the rest of mneme never imports it.
 */
export {
  type MiddlewareMneme,
  type MiddlewarePhase,
  type MnemeMiddleware,
  type MnemeMiddlewareOptions,
  mnemeMiddleware,
} from './ai-sdk/mneme-middleware.js';
