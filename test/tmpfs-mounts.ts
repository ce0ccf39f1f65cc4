import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Small tmpfs file systems mounted on new folders under `folder`, for tests of a full disk or a read-only mount
 * (root only): `mount` is null when this process may not mount, `canMount` says so once, and `unmountAll` (in an
 * `afterAll`, before the folder is removed) lets go of every mount left.
 */
export function tmpfsMounts(folder: string) {
  const mounted: string[] = [];
  /** Mounts a tmpfs of `size` bytes on the new folder `name`; null when this process may not mount. */
  const mount = (name: string, size: number): string | null => {
    const point = join(folder, name);
    mkdirSync(point);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', point], { stdio: 'ignore' });
    } catch {
      return null;
    }
    mounted.push(point);
    return point;
  };
  const probe = mount('probe', 1 << 20);
  if (probe !== null) {
    execFileSync('umount', [probe]);
    mounted.splice(mounted.indexOf(probe), 1);
  }
  return {
    mount,
    canMount: probe !== null,
    unmountAll() {
      for (const point of mounted.splice(0)) {
        try {
          execFileSync('umount', ['-l', point], { stdio: 'ignore' });
        } catch {
          // Already gone.
        }
      }
    },
  };
}
