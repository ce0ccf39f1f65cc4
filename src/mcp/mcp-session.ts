import type { Principal } from '../core/access.js';
import { ErrorCode, MnemeError } from '../core/errors.js';
import type { Mneme } from '../core/mneme.js';
import type { Viewer } from '../core/types.js';

/**
 * Who one MCP connection acts for, fixed by whoever configured the host (flags of `mneme mcp`, or the
 * API key and `Mneme-*` headers of a request to `/mcp`), never by the model: no tool takes a user,
 * channel, project or topic id (ADR 13).
 */
export interface McpSession {
  /** The engine as the session's principal may use it: `Mneme.as(principal)`. */
  mneme: Mneme;
  /** Every read and write of the session is for this viewer. */
  viewer: Viewer;
  /**
   * Records the session's exchanges (`ingest_exchange`). For a stdio server this is the operator's own
   * engine (the exchange between the configured user and the host's assistant); over HTTP it is the
   * key's view, so a user key is refused as on `POST /api/exchanges`.
   */
  exchanges: Pick<Mneme, 'ingestExchange'>;
  /** Named as the actor of the versions an administrator session writes (a user's name its principal). */
  actor: string;
}

/** The viewer ids a host may configure, as `mneme mcp` flags or environment variables give them. */
export interface McpViewerSettings {
  userId?: string | undefined;
  channelId?: string | undefined;
  projectId?: string | undefined;
  topicId?: string | undefined;
}

/**
 * The session of a stdio server started by the operator: with a user, that user's rights (as
 * `mneme --as <user>`), and its exchanges recorded by the operator's engine; without one, the
 * administrator, whose viewer holds only the channel, project and topic given (no personal memories).
 */
export function stdioSession(engine: Mneme, viewer: Viewer): McpSession {
  if (viewer.userId === undefined) return { mneme: engine, viewer, exchanges: engine, actor: 'mcp' };
  const principal: Principal = { kind: 'user', userId: viewer.userId, label: `mcp ${viewer.userId}` };
  return {
    mneme: engine.as(principal),
    viewer,
    exchanges: memberExchanges(engine),
    actor: principal.label,
  };
}

/**
 * The operator's engine recording a user session's exchanges: into a channel or topic that does not exist yet, the
 * first exchange makes the user its member (ADR 13); into one that exists, only while the user is a member (of the
 * topic's project too). A session lives as long as its host, and an administrator who removed the user from the
 * channel, topic or project meanwhile must not see the next exchange make the user a member again (FORBIDDEN
 * instead). The engine checks it before the append and writes only the memberships of the spaces the exchange starts
 * (`joinsOnlyNewSpaces`), so a removal landing meanwhile stays.
 */
function memberExchanges(engine: Mneme): Pick<Mneme, 'ingestExchange'> {
  return {
    ingestExchange: (input, options = {}) => engine.ingestExchange(input, { ...options, joinsOnlyNewSpaces: true }),
  };
}

/**
 * The session of one request to `/mcp`: a user key acts as its user only (a `Mneme-User` header naming
 * another is FORBIDDEN); an administrator key acts for the viewer the headers name.
 */
export function httpSession(engine: Mneme, principal: Principal, requested: Viewer): McpSession {
  const mneme = engine.as(principal);
  if (principal.kind === 'admin') return { mneme, viewer: requested, exchanges: mneme, actor: principal.label };
  if (requested.userId !== undefined && requested.userId !== principal.userId) {
    throw new MnemeError(
      ErrorCode.Forbidden,
      `the Mneme-User header names ${requested.userId}, but this key acts as user ${principal.userId}; leave the header out or name ${principal.userId}`,
    );
  }
  return { mneme, viewer: { ...requested, userId: principal.userId }, exchanges: mneme, actor: principal.label };
}
