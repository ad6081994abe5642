export { ajv, compile, describeAjvError, notServed } from './ajv';
export type { ValidationProblem, ValidateFunction, ErrorObject } from './ajv';
export {
  eventSchema,
  batchSchema,
  decideSchema,
  validateEvent,
  validateBatch,
  validateDecide,
  WEB_VITALS_METRICS,
} from './public';
export type { EventBody, BatchBody, DecideBody } from './public';
export type { FromSchema } from 'json-schema-to-ts';
export {
  MAX_JSON_DEPTH,
  MAX_NAME_LENGTH,
  storedName,
  cleanJson,
  cleanString,
  dropProtoKeys,
  exceedsDepth,
  findJsonProblem,
  unstorableReason,
} from './json-safety';
export type { JsonProblem } from './json-safety';
export { MAX_PROJECT_TOKEN_LENGTH, isWellFormedProjectToken } from './project-token';
export { UUID_PATTERN, isUuid } from './uuid';
