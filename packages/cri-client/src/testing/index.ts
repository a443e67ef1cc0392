export {
  FakeRuntimeService,
  FakeImageService,
  FakeBase,
  buildSandboxName,
  buildContainerName,
  type FakeSandbox,
  type FakeContainer,
  type RecordedCall,
  type NowSource,
} from './fake-runtime.js';
