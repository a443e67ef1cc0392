import type { FileHandle } from 'node:fs/promises';

/**
 * Go's tail uses 1 KiB blocks; a larger block costs nothing extra for a short tail and saves system
 * calls for a long one.
 */
export const TAIL_BLOCK_SIZE = 64 * 1024;

const EOL = 0x0a;

function countEol(buf: Buffer, end: number): number {
  let count = 0;
  for (let i = buf.indexOf(EOL); i >= 0 && i < end; i = buf.indexOf(EOL, i + 1)) count++;
  return count;
}

/**
 * Go's tail.FindTailLineStartIndex: the byte offset where the last n lines of the file start,
 * found by reading backwards block by block, so only the tail of a large log is read.
 * n < 0 means the whole file (0). An incomplete last line (no newline yet) is not counted, so
 * n = 0 gives the offset just after the last newline.
 */
export async function findTailLineStartIndex(file: FileHandle, n: number, blockSize = TAIL_BLOCK_SIZE): Promise<number> {
  if (n < 0) return 0;
  const { size } = await file.stat();
  let left = 0;
  let count = 0;
  let buf = Buffer.alloc(0);
  let length = 0;
  for (let right = size; right > 0 && count <= n; right -= blockSize) {
    left = Math.max(0, right - blockSize);
    length = right - left;
    if (buf.length < length) buf = Buffer.allocUnsafe(length);
    const { bytesRead } = await file.read(buf, 0, length, left);
    // The file may have shrunk under us; count only what was read.
    length = bytesRead;
    count += countEol(buf, length);
  }
  // The block holding the boundary has more newlines than needed: skip them from its front.
  let offset = 0;
  for (; count > n; count--) offset = buf.indexOf(EOL, offset) + 1;
  return left + offset;
}
