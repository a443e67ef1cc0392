import t from 'tap';
import {
  DEFAULT_IMAGE_GC_POLICY,
  ImageGCPolicyError,
  RealImageGCManager,
  imageGCPolicyWithDefaults,
  validateImageGCPolicy,
} from '../src/index.js';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';

const policy = (p: Partial<typeof DEFAULT_IMAGE_GC_POLICY>) => imageGCPolicyWithDefaults(p);

t.test('defaults are the Go kubelet defaults', async (t) => {
  t.same(DEFAULT_IMAGE_GC_POLICY, { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 });
  t.same(imageGCPolicyWithDefaults({ highThresholdPercent: 90, minAgeMs: undefined }), { ...DEFAULT_IMAGE_GC_POLICY, highThresholdPercent: 90 });
  t.doesNotThrow(() => validateImageGCPolicy(DEFAULT_IMAGE_GC_POLICY));
  t.doesNotThrow(() => validateImageGCPolicy(policy({ highThresholdPercent: 100, lowThresholdPercent: 0 })));
});

t.test('thresholds must be in [0-100] (Go NewImageGCManager messages)', async (t) => {
  t.throws(() => validateImageGCPolicy(policy({ highThresholdPercent: 101 })), { message: 'invalid HighThresholdPercent 101, must be in range [0-100]' });
  t.throws(() => validateImageGCPolicy(policy({ highThresholdPercent: -1, lowThresholdPercent: -5 })), {
    message: '[invalid HighThresholdPercent -1, must be in range [0-100], invalid LowThresholdPercent -5, must be in range [0-100]]',
  });
  t.throws(() => validateImageGCPolicy(policy({ lowThresholdPercent: 80.5 })), { message: 'invalid LowThresholdPercent 80.5, must be in range [0-100]' });
});

t.test('low must be below high', async (t) => {
  t.throws(() => validateImageGCPolicy(policy({ highThresholdPercent: 80, lowThresholdPercent: 85 })), {
    name: 'ImageGCPolicyError',
    message: 'LowThresholdPercent 85 can not be higher than HighThresholdPercent 80',
  });
  t.throws(() => validateImageGCPolicy(policy({ highThresholdPercent: 80, lowThresholdPercent: 80 })), {
    message:
      'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 80 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 80',
  });
});

t.test('ages', async (t) => {
  t.throws(() => validateImageGCPolicy(policy({ minAgeMs: -1000 })), { message: 'invalid configuration: imageMinimumGCAge -1s must not be negative' });
  t.throws(() => validateImageGCPolicy(policy({ maxAgeMs: -60_000 })), { message: 'invalid configuration: imageMaximumGCAge -1m0s must not be negative' });
  t.throws(() => validateImageGCPolicy(policy({ maxAgeMs: 60_000 })), {
    message: 'invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s',
  });
  t.doesNotThrow(() => validateImageGCPolicy(policy({ maxAgeMs: 3 * 3_600_000 })));
});

t.test('the constructor validates', async (t) => {
  const err = t.throws(() => new RealImageGCManager({ imageService: new FakeImageService(), runtimeService: new FakeRuntimeService(), policy: { highThresholdPercent: 120 } }));
  t.ok(err instanceof ImageGCPolicyError);
  t.same((err as ImageGCPolicyError).errors, ['invalid HighThresholdPercent 120, must be in range [0-100]']);
});
