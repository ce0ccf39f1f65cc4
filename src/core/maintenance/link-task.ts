import type { NewLink } from '../../storage/link-store.js';
import type { EngineContext } from '../engine-context.js';
import { ownerPrefix } from '../scope.js';
import { ALL_CHANNELS, type TaskReport } from './maintenance-task.js';

/** Memories closer than this (cosine) get a `semantic` link whose strength is the cosine. */
export const LINK_COSINE = 0.85;
/** Nearest neighbours looked at per new memory. */
export const LINK_NEIGHBOURS = 10;
/** New memories (and vectors) read per page. */
const PAGE_SIZE = 100;
/**
 * From this many memories to visit (a first cycle, an import, a model change, a restored backup), a store
 * that answers many neighbour searches at once (`searchOlderNeighbours`) is asked a page of them at a time,
 * and the pages are larger: the store then searches its lists' codes in memory and skips the searches that
 * can hold no older neighbour (ADR 20, 2026-12-01, session 6). Fewer: one `searchVector` each, as a
 * steady cycle's few new memories are cheaper searched through SQL than by reading every code first.
 */
export const LINK_BATCH_FROM = 256;
const BATCH_PAGE_SIZE = 500;

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
 * and global ones. A page of vectors at a time, never an all-pairs scan; with many memories to visit,
 * a page's searches asked of the store at once (`LINK_BATCH_FROM`), which answers the same older hits.
 * The watermark moves after each page's links are stored: a crash repeats at most one page, whose links
 * are stored again as they were (an existing link keeps its row). Then removes links to archived memories.
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
    const latest = await storage.maintenance.latestMemoryId();
    if (afterId < latest) while (await storage.maintenance.indexStep());
    const batched = latest - afterId >= LINK_BATCH_FROM && storage.memories.searchOlderNeighbours !== undefined;
    const pageSize = batched ? BATCH_PAGE_SIZE : PAGE_SIZE;
    // One array for every page's vectors (no vector is kept past its page): a new one a page was garbage that
    // the collector let pile up over the first pages, tens of MiB of resident set (2026-12-03, session 18).
    let into: Float32Array | undefined;
    for (;;) {
      // Ids and owners are all a page needs: a whole row of every memory was garbage too.
      const page = await storage.maintenance.textsAfter(afterId, pageSize);
      if (page.length === 0) break;
      into ??= new Float32Array(pageSize * embedder.dimensions);
      const vectors = await storage.maintenance.vectors(
        page.map((memory) => memory.id),
        embedder.modelId,
        into,
      );
      const searches = page.flatMap((memory) => {
        const vector = vectors.get(memory.id);
        if (!vector) return [];
        return [
          {
            vector,
            model: embedder.modelId,
            owners: memory.owner === ownerPrefix.global ? null : [ownerPrefix.global, memory.owner],
            limit: LINK_NEIGHBOURS + 1,
            minScore: LINK_COSINE,
            olderThan: memory.id,
          },
        ];
      });
      report.checked += searches.length;
      // Both ways answer the same hits older than the memory, the only ones linked.
      const found = (batched && (await storage.memories.searchOlderNeighbours?.(searches))) || [];
      if (!batched) for (const search of searches) found.push(await storage.memories.searchVector(search));
      const links: NewLink[] = [];
      for (const [index, search] of searches.entries()) {
        for (const hit of found[index] ?? []) {
          if (hit.id >= search.olderThan || hit.score <= LINK_COSINE) continue;
          links.push({
            sourceId: search.olderThan,
            targetId: hit.id,
            type: 'semantic',
            strength: Math.min(1, hit.score),
          });
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
