import t from 'tap';
import { apiVerb, cleanPath, isSubpath, requestAttributes, requestPath, subresourceForPath, unescapePath, type UserInfo } from '../src/auth/index.js';

const user: UserInfo = { name: 'alice', groups: ['devs'] };

t.test('subresource by path, as Go 1.20 GetRequestAttributes', async (t) => {
  const table: [string, string][] = [
    ['/stats', 'stats'],
    ['/stats/', 'stats'],
    ['/stats/summary', 'stats'],
    ['/stats/summary?only_cpu_and_memory=true', 'stats'],
    ['/stats/container/', 'stats'],
    ['/statsfoo', 'proxy'],
    ['/metrics', 'metrics'],
    ['/metrics/cadvisor', 'metrics'],
    ['/metrics/resource', 'metrics'],
    ['/metrics/probes', 'metrics'],
    ['/metricsfoo', 'proxy'],
    ['/logs', 'log'],
    ['/logs/', 'log'],
    ['/logs/syslog', 'log'],
    ['/logsx', 'proxy'],
    ['/spec', 'spec'],
    ['/spec/', 'spec'],
    ['/pods', 'proxy'],
    ['/runningpods/', 'proxy'],
    ['/healthz', 'proxy'],
    ['/configz', 'proxy'],
    ['/containerLogs/ns/pod/ctr', 'proxy'],
    ['/exec/ns/pod/ctr?command=ls', 'proxy'],
    ['/attach/ns/pod/ctr', 'proxy'],
    ['/portForward/ns/pod', 'proxy'],
    ['/run/ns/pod/ctr', 'proxy'],
    ['/debug/pprof/', 'proxy'],
    ['/', 'proxy'],
    // Percent-decoded like Go's r.URL.Path.
    ['/%73tats/summary', 'stats'],
    ['/stats%2Fsummary', 'stats'],
    // Authorized on the clean path: never "stats" for what is really /exec.
    ['/stats/../exec/ns/pod/ctr', 'proxy'],
    ['//stats/summary', 'stats'],
  ];
  for (const [url, subresource] of table) {
    const attrs = requestAttributes(user, { method: 'GET', url }, 'node-1');
    t.equal(attrs.subresource, subresource, url);
  }
});

t.test('the fixed attributes', async (t) => {
  const attrs = requestAttributes(user, { method: 'GET', url: '/stats/summary?x=1' }, 'node-1');
  t.same(attrs, {
    user,
    verb: 'get',
    namespace: '',
    apiGroup: '',
    apiVersion: 'v1',
    resource: 'nodes',
    subresource: 'stats',
    name: 'node-1',
    resourceRequest: true,
    path: '/stats/summary',
  });
  t.equal(requestAttributes(user, { method: 'GET', url: 'https://10.0.0.1:10250/pods?x' }, 'n').path, '/pods', 'absolute-form target');
});

t.test('verbs by method', async (t) => {
  const table: [string | undefined, string][] = [
    ['POST', 'create'],
    ['GET', 'get'],
    ['PUT', 'update'],
    ['PATCH', 'patch'],
    ['DELETE', 'delete'],
    ['HEAD', ''],
    ['OPTIONS', ''],
    ['CONNECT', ''],
    ['get', ''],
    [undefined, ''],
  ];
  for (const [method, verb] of table) {
    t.equal(apiVerb(method), verb, String(method));
    t.equal(requestAttributes(user, { method, url: '/exec/a/b/c' }, 'n').verb, verb);
  }
});

t.test('isSubpath', async (t) => {
  t.ok(isSubpath('/stats', '/stats/'));
  t.ok(isSubpath('/stats/x', '/stats/'));
  t.notOk(isSubpath('/statsx', '/stats/'));
  t.notOk(isSubpath('/stat', '/stats/'));
  t.ok(isSubpath('/metrics', '/metrics'));
  t.notOk(isSubpath('/', '/metrics'));
});

t.test('cleanPath is Go net/http cleanPath', async (t) => {
  const table: [string, string][] = [
    ['', '/'],
    ['/', '/'],
    ['pods', '/pods'],
    ['/pods/', '/pods/'],
    ['//pods', '/pods'],
    ['/a/./b', '/a/b'],
    ['/a/../b', '/b'],
    ['/../b', '/b'],
    ['/a/b/..', '/a'],
    ['/a/b/../', '/a/'],
    ['/a//b//', '/a/b/'],
  ];
  for (const [input, want] of table) t.equal(cleanPath(input), want, JSON.stringify(input));
});

t.test('percent-decoding', async (t) => {
  t.equal(unescapePath('/a%20b+c'), '/a b+c');
  t.equal(unescapePath('/%e2%82%ac'), '/€');
  t.equal(unescapePath('/%zz'), undefined);
  t.equal(unescapePath('/%4'), undefined);
  t.equal(unescapePath('/%41'), '/A');
  t.equal(requestPath({ url: '/x%2Fy?q=%zz' }), '/x/y', 'the query is not part of the path');
  t.equal(subresourceForPath('/logs/../stats'), 'stats');
});
