import type { CriErrorCode } from '@kubelet-ts/cri-client';

/** An error a CRI handler answers with: the gRPC status code name and the runtime's message. */
export class RuntimeError extends Error {
  constructor(
    readonly code: CriErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'RuntimeError';
  }
}

export const notFound = (what: string, id: string): RuntimeError =>
  new RuntimeError('NotFound', `an error occurred when try to find ${what} "${id}": not found`);

export const invalidArgument = (message: string): RuntimeError => new RuntimeError('InvalidArgument', message);

export const failedPrecondition = (message: string): RuntimeError => new RuntimeError('FailedPrecondition', message);
