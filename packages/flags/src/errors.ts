// The one error evaluation throws. evaluateFlags catches it per flag, leaves that flag out and
// reports errorsWhileComputingFlags, as PostHog does for a flag it cannot compute.

export class FlagEvaluationError extends Error {
  override readonly name = 'FlagEvaluationError';

  constructor(
    message: string,
    readonly flagKey?: string,
  ) {
    super(message);
  }
}
