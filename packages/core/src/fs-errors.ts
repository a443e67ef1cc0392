/** True for a filesystem error saying the path does not exist (Go: os.IsNotExist). */
export function isNotExist(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}
