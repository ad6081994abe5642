import { routeFor } from '../src/edge';

describe('edge routes', () => {
  it.each([
    ['/api/users/', 'management'],
    ['/api/projects/1/early_access_feature/', 'management'],
    ['/i/v0/e/', 'capture'],
    ['/i/v0/e', 'capture'],
    ['/e/', 'capture'],
    ['/capture', 'capture'],
    ['/track/', 'capture'],
    ['/batch/', 'capture'],
    ['/engage/', 'capture'],
    ['/decide', 'decide'],
    ['/decide/', 'decide'],
    ['/flags/', 'decide'],
    ['/flags/definitions', 'decide'],
    ['/flags/definitions/', 'decide'],
    ['/array/phc_abc/config', 'decide'],
    ['/array/phc_abc/config.js', 'decide'],
    ['/static/array.js', 'decide'],
    ['/static/surveys.js', 'decide'],
    ['/api/feature_flag/local_evaluation', 'decide'],
    ['/api/feature_flag/local_evaluation/', 'decide'],
    ['/api/early_access_features/', 'decide'],
    ['/api/early_access_features', 'decide'],
    ['/api/surveys/', 'decide'],
    ['/api/web_experiments/', 'decide'],
    ['/api/product_tours', 'decide'],
    // Only those exact paths: their neighbours under /api/ stay with management.
    ['/api/early_access_features/x/', 'management'],
    ['/api/surveys/1/', 'management'],
    ['/api/feature_flag/', 'management'],
    ['/api/projects/@current/feature_flags/k/remote_config', 'management'],
    ['/api/projects/1/surveys/', 'management'],
    ['/api/', 'management'],
    ['/array', null],
    ['/static', null],
    ['/flags/other', null],
    ['/apix', null],
    ['/batches/', null],
    // The web console: its page and hashed assets are management's; nothing else at the root.
    ['/', 'management'],
    ['/assets/index-abc.js', 'management'],
    ['/assets', null],
    ['/index.html', null],
  ])('%s -> %s', (path, target) => {
    expect(routeFor(path)).toBe(target);
  });
});
