import { describeAjvError, validateBatch, validateDecide, validateEvent } from '../src';

describe('public request schemas', () => {
  it('accepts PostHog event bodies, including ones ingestion drops later', () => {
    expect(
      validateEvent({
        api_key: 'phc_x',
        event: '$pageview',
        distinct_id: 'u1',
        properties: { $current_url: '/' },
      }),
    ).toBe(true);
    expect(validateEvent({ api_key: 'phc_x', distinct_id: 42, properties: {} })).toBe(true);
    expect(validateEvent({ api_key: 'phc_x', event: 'no id' })).toBe(true);
  });

  it('rejects wrong types and says which field', () => {
    expect(validateEvent({ event: 'x', properties: 'not an object' })).toBe(false);
    expect(describeAjvError(validateEvent.errors)).toEqual({
      detail: 'properties must be object.',
      attr: 'properties',
    });
    expect(validateEvent({ event: 5 })).toBe(false);
    expect(describeAjvError(validateEvent.errors).attr).toBe('event');
  });

  it('requires batch to be an array of event objects', () => {
    expect(validateBatch({ api_key: 'k', batch: [{ event: 'a', properties: { distinct_id: 'x' } }] })).toBe(
      true,
    );
    expect(validateBatch({ api_key: 'k' })).toBe(false);
    expect(describeAjvError(validateBatch.errors)).toEqual({ detail: 'batch is required.', attr: 'batch' });
    expect(validateBatch({ api_key: 'k', batch: [1] })).toBe(false);
    expect(describeAjvError(validateBatch.errors).attr).toBe('batch.0');
    expect(validateBatch({ api_key: 'k', batch: [], historical_migration: 'yes' })).toBe(false);
  });

  it('requires distinct_id for flag evaluation', () => {
    expect(validateDecide({ api_key: 'k', distinct_id: 'u', groups: { company: 'acme' } })).toBe(true);
    expect(validateDecide({ api_key: 'k' })).toBe(false);
    expect(describeAjvError(validateDecide.errors).attr).toBe('distinct_id');
    expect(validateDecide({ api_key: 'k', distinct_id: 'u', groups: { company: { nested: 1 } } })).toBe(
      false,
    );
  });
});
