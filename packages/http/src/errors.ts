// Errors as values with meaning. Domain code throws these; the one error middleware turns them
// into a status code and a PostHog-style JSON body `{type, code, detail, attr}`.

export type ErrorType =
  | 'validation_error'
  | 'authentication_error'
  | 'invalid_request'
  | 'throttled_error'
  | 'server_error'
  | 'unavailable_error';

export interface ErrorBody {
  type: ErrorType;
  code: string;
  detail: string;
  attr: string | null;
  error_id?: string;
}

export class SettError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string,
    detail: string,
    readonly attr: string | null = null,
    /** Extra response headers, e.g. Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = new.target.name;
  }

  toJSON(): ErrorBody {
    return { type: this.type, code: this.code, detail: this.message, attr: this.attr };
  }
}

export class ValidationError extends SettError {
  constructor(detail: string, attr: string | null = null, code = 'invalid_input') {
    super(400, 'validation_error', code, detail, attr);
  }
}

export class AuthenticationError extends SettError {
  constructor(detail = 'Authentication credentials were not provided.', code = 'not_authenticated') {
    super(401, 'authentication_error', code, detail);
  }
}

export class ForbiddenError extends SettError {
  constructor(detail = 'You do not have permission to perform this action.', code = 'permission_denied') {
    super(403, 'authentication_error', code, detail);
  }
}

export class NotFoundError extends SettError {
  constructor(detail = 'Not found.') {
    super(404, 'invalid_request', 'not_found', detail);
  }
}

export class MethodNotAllowedError extends SettError {
  constructor(method: string, allowed: string[]) {
    super(405, 'invalid_request', 'method_not_allowed', `Method "${method}" not allowed.`, null, {
      Allow: allowed.join(', '),
    });
  }
}

export class ConflictError extends SettError {
  constructor(detail: string, attr: string | null = null) {
    super(409, 'validation_error', 'conflict', detail, attr);
  }
}

export class PayloadTooLargeError extends SettError {
  constructor(detail = 'Request body is too large.') {
    super(413, 'invalid_request', 'payload_too_large', detail);
  }
}

export class RateLimitedError extends SettError {
  constructor(retryAfterSeconds: number) {
    super(
      429,
      'throttled_error',
      'throttled',
      `Request was throttled. Expected available in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}.`,
      null,
      { 'Retry-After': String(retryAfterSeconds) },
    );
  }
}

export class ServiceUnavailableError extends SettError {
  constructor(detail = 'Service temporarily unavailable, retry later.', retryAfterSeconds = 1) {
    super(503, 'unavailable_error', 'service_unavailable', detail, null, {
      'Retry-After': String(retryAfterSeconds),
    });
  }
}

/** 504: work stopped at its deadline (PostHog's query timeout answer). */
export class TimeoutError extends SettError {
  constructor(
    detail = 'Query has hit the max execution time before completing. Narrow the date range, the breakdown or the filters, and run it again.',
    code = 'query_timeout',
  ) {
    super(504, 'server_error', code, detail);
  }
}

/** 414: a path, or a segment of it, longer than any resource's. */
export class UriTooLongError extends SettError {
  constructor(detail: string) {
    super(414, 'invalid_request', 'uri_too_long', detail, 'path');
  }
}
