// The fault suite's figures: one row per measurement, what it must be (when it is a promise), and
// whether it held; printed as a Markdown table and written into docs/reliability.md between markers.
import { readFileSync, writeFileSync } from 'node:fs';

export const docBegin = '<!-- faults:begin -->';
export const docEnd = '<!-- faults:end -->';

/**
 * The rows of the table from the parts' results. `must` is `'0'`, `'> 0'`, `'yes'` or `''` (a figure
 * that is measured, not promised).
 */
export function figureRows(results) {
  const rows = [];
  const row = (part, figure, measured, must = '') => {
    const value = typeof measured === 'number' ? measured : String(measured);
    let held = '';
    if (must === '0') held = value === 0 ? 'ok' : 'FAILS';
    if (must === '> 0') held = typeof value === 'number' && value > 0 ? 'ok' : 'FAILS';
    if (must === 'yes') held = value === 'yes' ? 'ok' : 'FAILS';
    rows.push({ part, figure, measured: value, must, held });
  };
  const duration = (value) => (value === null || value === undefined ? '-' : `${Math.round(value)} ms`);
  for (const [part, error] of Object.entries(results.errors ?? {}))
    row(part, `the part could not run: ${error}`, 1, '0');

  const { serve, ingest } = results.crash ?? {};
  if (serve) {
    row(
      'crash',
      `\`mneme serve\` killed -9 under HTTP write load (${serve.kills} kills), writes acknowledged`,
      serve.acknowledged,
    );
    row('crash', 'serve: acknowledged writes lost', serve.lost, '0');
    row('crash', 'serve: integrity_check and FTS5 integrity-check failures', serve.integrity.length, '0');
    row('crash', 'serve: duplicate memories after restarts and a final catch-up', serve.duplicates.extra, '0');
    row('crash', 'serve: messages never extracted after a final catch-up', serve.unextracted.count, '0');
  }
  if (ingest) {
    row(
      'crash',
      `\`mneme ingest\` killed -9 (${ingest.kills} kills of ${ingest.lines}-line files, half at a moment, half after some extraction): kills before the last line was appended`,
      ingest.killedMidFile,
    );
    row('crash', 'ingest: batches or exchanges written in part', ingest.partialWrites, '0');
    row('crash', 'ingest: integrity_check and FTS5 integrity-check failures', ingest.integrity.length, '0');
    row('crash', 'ingest: duplicate memories after a final catch-up', ingest.duplicates.extra, '0');
    row('crash', 'ingest: messages never extracted after a final catch-up', ingest.unextracted.count, '0');
  }
  const { mixed, importers, newFile } = results.concurrency ?? {};
  if (mixed) {
    row(
      'concurrency',
      `server under HTTP load + ${mixed.cliRuns} CLI runs (\`add\`, \`ingest\`) on one file: HTTP writes`,
      mixed.httpWrites,
    );
    row(
      'concurrency',
      'mixed: user-visible errors (non-2xx answers, non-zero exits)',
      mixed.httpErrors + mixed.cliFailures,
      '0',
    );
    row('concurrency', 'mixed: acknowledged writes lost', mixed.lost, '0');
    row('concurrency', 'mixed: duplicate memories', mixed.duplicates.extra, '0');
    row('concurrency', 'mixed: messages never extracted', mixed.unextracted.count, '0');
    row('concurrency', 'mixed: integrity failures', mixed.integrity.length, '0');
  }
  if (importers) {
    row(
      'concurrency',
      `two \`mneme ingest\` of one ${importers.lines}-line file at once (new file, then existing): non-zero exits`,
      importers.failures,
      '0',
    );
    row(
      'concurrency',
      'two importers: duplicate memories (facts and exchange chunks)',
      importers.duplicates.extra,
      '0',
    );
    row('concurrency', 'two importers: messages never extracted', importers.unextracted.count, '0');
    row('concurrency', 'two importers: integrity failures', importers.integrity.length, '0');
  }
  if (newFile) {
    row(
      'concurrency',
      `${newFile.processes} processes opening one new file at once (${newFile.rounds} times): failed runs`,
      newFile.failures.length,
      '0',
    );
  }
  const { http, cli } = results.fuzz ?? {};
  if (http) {
    row('fuzz', `HTTP requests (${http.corpusRequests} from \`${http.corpus}\`, the rest mutated)`, http.requests);
    row('fuzz', 'HTTP: corpus cases the loader could not read (no path)', http.unreadableCases, '0');
    row('fuzz', 'HTTP: 5xx answers', http.serverErrors.length, '0');
    row('fuzz', 'HTTP: server crashes', http.crashes.length, '0');
    row('fuzz', 'HTTP: stack traces in response bodies', http.stackTracesInBodies.length, '0');
    row('fuzz', 'HTTP: stack traces in the server log', http.stackTracesInServerLog);
    row('fuzz', 'HTTP: hangs (no answer within 5 s)', http.hangs.length, '0');
    row('fuzz', 'HTTP: refused requests that changed data', http.changedAlthoughRefused.length, '0');
    row('fuzz', 'HTTP: corpus answers with another status than the corpus expects', http.unexpectedStatus.length, '0');
  }
  if (cli) {
    row('fuzz', `CLI runs (\`${cli.corpus}\`)`, cli.runs);
    row('fuzz', 'CLI: corpus cases the loader could not read (no arguments)', cli.unreadableCases, '0');
    row('fuzz', 'CLI: unexpected errors (exit 1, or 7 "storage failure" on bad input)', cli.internalErrors.length, '0');
    row('fuzz', 'CLI: crashes (signal, exit code above 9)', cli.crashes.length, '0');
    row('fuzz', 'CLI: stack traces on stdout or stderr', cli.stackTraces.length, '0');
    row('fuzz', 'CLI: hangs (killed at the case timeout)', cli.hangs.length, '0');
    row('fuzz', 'CLI: refused runs that changed data', cli.changedAlthoughRefused.length, '0');
    row('fuzz', 'CLI: exit codes the corpus does not expect', cli.unexpectedExit.length, '0');
  }
  const { catchUp, lock } = results.availability ?? {};
  if (catchUp) {
    row(
      'availability',
      `backlog of ${catchUp.backlog} messages: server listening after / caught up after`,
      `${duration(catchUp.listeningAfterMs)} / ${duration(catchUp.caughtUpAfterMs)}`,
    );
    row(
      'availability',
      `catch-up: \`/api/health\` p50 / p99 / max of ${catchUp.answered} answers (every ${results.settings?.healthIntervalMs} ms from the process start)`,
      `${duration(catchUp.p50)} / ${duration(catchUp.p99)} / ${duration(catchUp.max)}`,
    );
    row(
      'availability',
      'catch-up: health answers while the backlog was still pending',
      catchUp.answeredWhileBacklogPending,
      '> 0',
    );
    row('availability', 'catch-up: health requests unanswered 10 s after the process started', catchUp.unanswered, '0');
  }
  if (lock?.short) {
    const short = lock.short;
    row(
      'availability',
      `write lock held by another process ${duration(short.heldMs)} (under the 5 s busy timeout), a client posting every ${results.settings?.lockWriteIntervalMs} ms: health p50 / p99 / max`,
      `${duration(short.p50)} / ${duration(short.p99)} / ${duration(short.max)}`,
    );
    row('availability', 'short lock: health answers while the lock was held', short.answeredWhileLocked, '> 0');
  }
  if (lock?.long) {
    const long = lock.long;
    row(
      'availability',
      `write lock held ${duration(long.heldMs)} (past the busy timeout): health p50 / p99 / max`,
      `${duration(long.p50)} / ${duration(long.p99)} / ${duration(long.max)}`,
    );
    row('availability', 'long lock: health answers while the lock was held', long.answeredWhileLocked);
    row('availability', 'long lock: health requests with no answer within 10 s', long.timeouts, '0');
    row('availability', 'long lock: writes answered 503 with Retry-After', long.writesBusyWithRetryAfter, '> 0');
    row('availability', 'long lock: writes with no answer within 10 s', long.writesTimedOut, '0');
    row(
      'availability',
      'long lock: writes answered 503 / accepted after the lock / total',
      `${long.writesBusy} / ${long.writesAccepted} / ${long.writes}`,
    );
  }
  const purge = results.purge;
  if (purge) {
    row(
      'purge',
      `${purge.words} distinctive words said by one user: rows holding them before the purge`,
      purge.rowsBefore,
      '> 0',
    );
    row('purge', 'rows holding a word after `DELETE /api/users/{id}/data`', purge.rowsAfter, '0');
    row('purge', "the other user's messages kept", purge.otherUserMessagesKept ? 'yes' : 'no', 'yes');
    row(
      'purge',
      'raw byte hits in the file, -wal and -shm while the server still runs',
      `${purge.byteHitsWhileRunning.total} (${purge.byteHitsWhileRunning.wordsFound} words)`,
    );
    row('purge', 'raw byte hits in the file, -wal and -shm after a clean stop', purge.byteHitsAfterClose.total, '0');
  }
  return rows;
}

/** Rows as a Markdown table, columns padded. */
export function markdownTable(rows) {
  const header = ['part', 'figure', 'measured', 'must be', 'held'];
  const cells = rows.map((row) => [row.part, row.figure, String(row.measured), row.must, row.held]);
  const widths = header.map((title, index) => Math.max(title.length, ...cells.map((line) => line[index].length)));
  const line = (values) => `| ${values.map((value, index) => value.padEnd(widths[index])).join(' | ')} |`;
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...cells.map(line)].join('\n');
}

/** Examples of what failed, for the doc and the terminal. */
export function failureNotes(results) {
  const notes = [];
  const list = (title, items) => {
    if (items && items.length > 0)
      notes.push(
        `- ${title}: ${items
          .slice(0, 5)
          .map((item) => `\`${String(item).replaceAll('`', "'").replaceAll('\n', ' / ').slice(0, 220)}\``)
          .join('; ')}`,
      );
  };
  const { serve, ingest } = results.crash ?? {};
  list('crash, serve: integrity', serve?.integrity);
  list('crash, serve: duplicates', serve?.duplicates.examples);
  list('crash, ingest: integrity', ingest?.integrity);
  list('crash, ingest: duplicates', ingest?.duplicates.examples);
  const { mixed, importers } = results.concurrency ?? {};
  list('concurrency, mixed: errors', [
    ...(mixed?.httpErrorExamples ?? []).map((item) => JSON.stringify(item)),
    ...(mixed?.cliFailureExamples ?? []).map((item) => JSON.stringify(item)),
  ]);
  list(
    'concurrency, importers: failed runs',
    importers?.rounds.flatMap((round) => round.failureExamples.map((text) => `${round.round}: ${text}`)),
  );
  list('concurrency, importers: duplicates', importers?.duplicates.examples);
  list('concurrency, new file: failed runs', results.concurrency?.newFile?.failures);
  list('concurrency, mixed: duplicates', mixed?.duplicates.examples);
  const { http, cli } = results.fuzz ?? {};
  list('fuzz, HTTP 5xx', http?.serverErrors);
  list('fuzz, HTTP hangs', http?.hangs);
  list('fuzz, HTTP changed although refused', http?.changedAlthoughRefused);
  list('fuzz, CLI unexpected errors', cli?.internalErrors);
  list('fuzz, CLI hangs', cli?.hangs);
  list('fuzz, CLI crashes', cli?.crashes);
  list('fuzz, CLI changed although refused', cli?.changedAlthoughRefused);
  return notes.map((note) => note.replaceAll(/\/tmp\/[^\s/]+\//g, '<tmp>/'));
}

/** Replaces what is between the markers of `docPath` with `block`; the prose around it stays. */
export function writeIntoDoc(docPath, block) {
  const text = readFileSync(docPath, 'utf8');
  const begin = text.indexOf(docBegin);
  const end = text.indexOf(docEnd);
  if (begin === -1 || end === -1 || end < begin) throw new Error(`${docPath} has no ${docBegin} ... ${docEnd} markers`);
  writeFileSync(docPath, `${text.slice(0, begin + docBegin.length)}\n${block}\n${text.slice(end)}`);
}
