import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * A JSON document rewritten atomically (write + rename). save() coalesces the writes of one turn
 * of the event loop; flush() writes at once (on stop).
 */
export class StateFile<T> {
  private scheduled: NodeJS.Immediate | undefined;

  constructor(
    readonly path: string,
    private readonly snapshot: () => T,
  ) {}

  load(): T | undefined {
    try {
      return JSON.parse(readFileSync(this.path, 'utf8')) as T;
    } catch {
      return undefined;
    }
  }

  save(): void {
    if (this.scheduled) return;
    this.scheduled = setImmediate(() => {
      this.scheduled = undefined;
      this.write();
    });
  }

  flush(): void {
    if (this.scheduled) {
      clearImmediate(this.scheduled);
      this.scheduled = undefined;
    }
    this.write();
  }

  private write(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.snapshot()));
    renameSync(tmp, this.path);
  }
}
