// formatTime for the many timestamps of one summary: most fall in a few seconds, so each second's text is made once.
import { formatTime } from '@kubelet-ts/core';

const MAX_ENTRIES = 1024;
const bySecond = new Map<number, string>();

/** core's formatTime (metav1.Time, whole seconds) of a time in ms, the text of each second kept (a pure mapping: never stale). */
export function formatTimeMs(ms: number): string {
  const second = Math.floor(ms / 1000);
  let text = bySecond.get(second);
  if (text === undefined) {
    text = formatTime(ms);
    if (bySecond.size >= MAX_ENTRIES) bySecond.clear();
    bySecond.set(second, text);
  }
  return text;
}
