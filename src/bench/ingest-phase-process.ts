import { type IngestPhaseInput, type PhaseMessage, runIngestPhase } from './ingest-phase.js';

// The entry of `mneme bench`'s ingest and maintenance phase in a process of its own (`measureIngestPhase` forks it):
// it takes the phase's input from the bench, runs it, and answers with the figures or the failure.
const send = (message: PhaseMessage, then: () => void = () => {}) => process.send?.(message, then);

process.once('message', (input: IngestPhaseInput) => {
  const reporter = {
    progress(label: string, total: number) {
      send({ type: 'bar', label, total });
      return { update: (done: number) => send({ type: 'update', done }), finish: () => send({ type: 'finish' }) };
    },
    log: (line: string) => send({ type: 'log', line }),
  };
  // The last message sent, the channel is closed and the process ends.
  const end = () => process.disconnect?.();
  runIngestPhase(input, reporter).then(
    (figures) => send({ type: 'done', figures }, end),
    (error: unknown) => send({ type: 'failed', message: error instanceof Error ? error.message : String(error) }, end),
  );
});
