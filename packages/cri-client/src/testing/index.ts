export {
  FakeRuntimeService,
  FakeImageService,
  FakeBase,
  CallRecorder,
  buildSandboxName,
  buildContainerName,
  type FakeSandbox,
  type FakeContainer,
  type FakeStopBehavior,
  type FakeExecResult,
  type RecordedCall,
  type NowSource,
} from './fake-runtime.js';
