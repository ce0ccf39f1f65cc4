/** The background tasks of maintenance, in the order a full cycle runs them. */
export const maintenanceTasks = ['decay', 'episodes', 'consolidate', 'link', 'dream'] as const;

/**
 * One background task: decay, episodes, consolidate, link or dream. Each keeps its `maintenance_state`
 * rows under its own name: `episodes` per channel (watermark: the last message summarised), the others
 * under `ALL_CHANNELS` (`consolidate`, `link`, `dream`: the last memory id examined).
 */
export type MaintenanceTask = (typeof maintenanceTasks)[number];

export { MAINTENANCE_ACTOR } from '../reserved-ids.js';

/**
 * The `maintenance_state` channel id of tasks that run over the whole store rather than one
 * channel (decay, consolidation, linking, dream). No real channel id is empty.
 */
export const ALL_CHANNELS = '';

/** What every task report carries: why the task did nothing, or null when it ran. */
export interface TaskReport {
  skipped: string | null;
}
