// @sett/sdk-e2e: the real PostHog SDKs against the stack that `pnpm start` brings up.
export * from './api';
export * from './catalogue';
export * from './recorder';
export * from './stack';
export * from './browser';
