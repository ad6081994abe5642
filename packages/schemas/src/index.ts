export { ajv, compile, describeAjvError } from './ajv';
export type { ValidationProblem, ValidateFunction, ErrorObject } from './ajv';
export {
  eventSchema,
  batchSchema,
  decideSchema,
  validateEvent,
  validateBatch,
  validateDecide,
} from './public';
export type { EventBody, BatchBody, DecideBody } from './public';
export type { FromSchema } from 'json-schema-to-ts';
