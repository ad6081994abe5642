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
    ['/apix', null],
    ['/batches/', null],
    ['/', null],
  ])('%s -> %s', (path, target) => {
    expect(routeFor(path)).toBe(target);
  });
});
