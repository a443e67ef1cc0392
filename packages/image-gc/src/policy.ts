import { formatDuration } from '@kubelet-ts/core';
// The image garbage collection policy (Go: images.ImageGCPolicy) and its validation, with the
// messages of Go's NewImageGCManager and of the kubelet configuration validation.

/** Go: pkg/kubelet/images.ImageGCPolicy, with durations in milliseconds. */
export interface ImageGCPolicy {
  /** Disk usage percent at or above which image GC runs (--image-gc-high-threshold). Default 85. */
  highThresholdPercent: number;
  /** Disk usage percent image GC frees down to (--image-gc-low-threshold). Default 80. */
  lowThresholdPercent: number;
  /** An image detected less than this long ago is never collected (--minimum-image-ttl-duration). Default 2 min. */
  minAgeMs: number;
  /** When > 0, images unused for longer than this are removed whatever the disk usage (imageMaximumGCAge). Default 0: off. */
  maxAgeMs: number;
}

/** The Go kubelet's defaults (KubeletConfiguration v1beta1). */
export const DEFAULT_IMAGE_GC_POLICY: Readonly<ImageGCPolicy> = Object.freeze({
  highThresholdPercent: 85,
  lowThresholdPercent: 80,
  minAgeMs: 2 * 60 * 1000,
  maxAgeMs: 0,
});

/** A full policy from a partial one, missing fields taking the Go defaults. */
export function imageGCPolicyWithDefaults(policy: Partial<ImageGCPolicy> = {}): ImageGCPolicy {
  const out = { ...DEFAULT_IMAGE_GC_POLICY };
  for (const key of Object.keys(out) as (keyof ImageGCPolicy)[]) {
    const value = policy[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** Thrown by validateImageGCPolicy; `errors` holds every problem found, `message` joins them. */
export class ImageGCPolicyError extends Error {
  override readonly name = 'ImageGCPolicyError';
  constructor(readonly errors: string[]) {
    super(errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`);
  }
}

const isPercent = (n: number): boolean => Number.isInteger(n) && n >= 0 && n <= 100;

/**
 * Throws ImageGCPolicyError unless both thresholds are integers in [0, 100] with low < high, the
 * ages are not negative and a max age, when set, is greater than the min age. Messages are Go's:
 * NewImageGCManager's for the ranges, the kubelet configuration validation's for the rest.
 */
export function validateImageGCPolicy(policy: ImageGCPolicy): void {
  const errors: string[] = [];
  const { highThresholdPercent: high, lowThresholdPercent: low, minAgeMs, maxAgeMs } = policy;
  if (!isPercent(high)) errors.push(`invalid HighThresholdPercent ${high}, must be in range [0-100]`);
  if (!isPercent(low)) errors.push(`invalid LowThresholdPercent ${low}, must be in range [0-100]`);
  if (errors.length === 0) {
    if (low > high) {
      errors.push(`LowThresholdPercent ${low} can not be higher than HighThresholdPercent ${high}`);
    } else if (low === high) {
      errors.push(
        `invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${high}`,
      );
    }
  }
  if (!Number.isFinite(minAgeMs) || minAgeMs < 0) {
    errors.push(`invalid configuration: imageMinimumGCAge ${formatDuration(minAgeMs)} must not be negative`);
  }
  if (!Number.isFinite(maxAgeMs) || maxAgeMs < 0) {
    errors.push(`invalid configuration: imageMaximumGCAge ${formatDuration(maxAgeMs)} must not be negative`);
  } else if (maxAgeMs > 0 && maxAgeMs <= minAgeMs) {
    errors.push(
      `invalid configuration: imageMaximumGCAge ${formatDuration(maxAgeMs)} must be greater than imageMinimumGCAge ${formatDuration(minAgeMs)}`,
    );
  }
  if (errors.length > 0) throw new ImageGCPolicyError(errors);
}
