import type { NewLink } from '../../storage/link-store.js';
import type { EngineContext } from '../engine-context.js';
import { ownerKey } from '../scope.js';
import { ALL_CHANNELS, type TaskReport } from './maintenance-task.js';

/** Memories closer than this (cosine) get a `semantic` link whose strength is the cosine. */
export const LINK_COSINE = 0.85;
/** Nearest neighbours looked at per new memory. */
export const LINK_NEIGHBOURS = 10;
/** New memories (and vectors) read per page. */
const PAGE_SIZE = 100;

/** What one linking run did. */
export interface LinkReport extends TaskReport {
  /** New memories that had a vector and were looked up. */
  checked: number;
  /** Semantic links added. */
  created: number;
  /** Links to archived memories removed. */
  removed: number;
}

/**
 * Links each memory newer than the link watermark to its nearest older memories with cosine > 0.85
 * (`semantic`, strength = cosine), one KNN query per memory through the scoped vector search, bounded
 * by that cosine (the index scans for close codes only and ranks a few candidates exactly; in a large
 * store it reads only the inverted lists' angle bands that may hold such a neighbour, built first in
 * bounded steps, ADR 20): a global memory may link to any owner's, others only to their own owner's
 * and global ones. A page
 * of vectors at a time, never an all-pairs scan. Then removes links to archived memories.
 * Without an embedding model only the cleanup runs.
 */
export async function runLink(context: EngineContext, now: number): Promise<LinkReport> {
  const { storage, embedder } = context;
  const report: LinkReport = { checked: 0, created: 0, removed: 0, skipped: null };
  if (embedder) {
    const state = await storage.maintenanceState.get(ALL_CHANNELS, 'link');
    let afterId = state?.watermark ?? 0;
    // The neighbour searches of a large store read inverted lists (ADR 20): first train and fill
    // them, a bounded step at a time, when there is something to link.
    if (afterId < (await storage.maintenance.latestMemoryId())) while (await storage.maintenance.indexStep());
    for (;;) {
      const page = await storage.maintenance.listAfter(afterId, PAGE_SIZE);
      if (page.length === 0) break;
      const vectors = await storage.maintenance.vectors(
        page.map((memory) => memory.id),
        embedder.modelId,
      );
      const links: NewLink[] = [];
      for (const memory of page) {
        const vector = vectors.get(memory.id);
        if (!vector) continue;
        report.checked++;
        const owner = ownerKey(memory.scope, memory);
        const hits = await storage.memories.searchVector({
          vector,
          model: embedder.modelId,
          owners: memory.scope === 'global' ? null : [...new Set(['global', owner])],
          limit: LINK_NEIGHBOURS + 1,
          minScore: LINK_COSINE,
        });
        for (const hit of hits) {
          if (hit.id >= memory.id || hit.score <= LINK_COSINE) continue;
          links.push({ sourceId: memory.id, targetId: hit.id, type: 'semantic', strength: Math.min(1, hit.score) });
        }
      }
      report.created += await storage.links.add(links, now);
      afterId = page.at(-1)?.id ?? afterId;
      await storage.maintenanceState.set(ALL_CHANNELS, 'link', { watermark: afterId });
    }
  } else {
    report.skipped = 'no embedding model: only links to archived memories were removed';
  }
  report.removed = await storage.links.removeArchived();
  await storage.maintenanceState.set(ALL_CHANNELS, 'link', { lastRunAt: now });
  return report;
}
