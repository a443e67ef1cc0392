// The kubelet server's routing as Go's ServeMux + go-restful order it (issue 29's 10250 matrix): the mux answers
// unknown paths (404) and redirects (301) before authentication; below a registered path the request is
// authenticated and authorized first, and only then is a missing route (404) or a wrong method (405) answered.
// Also the handlers the matrix found missing: /debug/pprof/{name}, /debug/flags/v, and /spec/ only on request.
import t, { type Test } from 'tap';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { noopLogger } from '@kubelet-ts/core';
import { FakeClock } from '@kubelet-ts/core/testing';
import { KubeletServer, type KubeletServerOptions, type RequestGate, type ServerHost } from '../src/index.js';

const host: ServerHost = {
  healthChecks: [
    { name: 'ping', check: () => undefined },
    { name: 'syncloop', check: () => undefined },
  ],
  getPods: () => [],
  getRunningPods: async () => [],
  getPodByName: () => undefined,
  getConfigz: () => ({}),
  getMachineInfo: async () => ({ num_cores: 2 }),
  getContainerLogs: async () => undefined,
  getExec: async () => 'http://127.0.0.1:1/',
  getAttach: async () => 'http://127.0.0.1:1/',
  getPortForward: async () => 'http://127.0.0.1:1/',
  runInContainer: async () => Buffer.from(''),
  getStatsSummary: async () => ({}),
};

/** A gate that refuses everyone with 401, as the kubelet's for a request with no credential, and counts its calls. */
function denyingGate(): RequestGate & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    checkRequest: async (request: IncomingMessage, response: ServerResponse) => {
      asked.push(`${request.method} ${request.url}`);
      response.writeHead(401, { 'content-type': 'text/plain; charset=utf-8' }).end('Unauthorized');
      return false;
    },
  };
}

const allowAll: RequestGate = { checkRequest: async () => true };

async function started(t: Test, options: Partial<KubeletServerOptions> = {}): Promise<number> {
  const server = new KubeletServer({ host, address: '127.0.0.1', port: 0, logger: noopLogger, gate: allowAll, ...options });
  const port = await server.start();
  t.teardown(() => server.stop());
  return port;
}

function send(port: number, path: string, method = 'GET', body?: string): Promise<{ status: number; body: string; headers: IncomingMessage['headers'] }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

t.test('the mux answers before authentication: unknown paths 404, subtree roots and unclean paths 301', async (t) => {
  const gate = denyingGate();
  const port = await started(t, { gate });
  for (const path of ['/', '/nope', '/spec/', '/spec', '/healthz/nope', '/healthz/', '/metrics/nope', '/metrics/', '/checkpoint/ns/pod/c', '/configzz']) {
    const res = await send(port, path);
    t.same([res.status, res.body], [404, '404 page not found'], `${path}: not a path of the server`);
  }
  for (const [path, location] of [
    ['/runningpods', '/runningpods/'],
    ['/logs', '/logs/'],
    ['/stats', '/stats/'],
    ['/debug/pprof', '/debug/pprof/'],
    ['/stats?only_cpu_and_memory=true', '/stats/?only_cpu_and_memory=true'],
    ['/pods/../exec/ns/pod/c', '/exec/ns/pod/c'],
    ['//pods', '/pods'],
  ] as const) {
    const res = await send(port, path);
    t.same([res.status, res.headers.location], [301, location], `${path}: redirected to ${location}`);
  }
  t.same(gate.asked, [], 'the gate was never asked');
});

t.test('below a registered path the gate is asked first, even where no route or method matches', async (t) => {
  const gate = denyingGate();
  const port = await started(t, { gate });
  const requests: Array<[string, string]> = [
    ['GET', '/pods/extra'],
    ['POST', '/pods'],
    ['GET', '/run/ns/pod/c'],
    ['POST', '/containerLogs/ns/pod/c'],
    ['GET', '/exec/ns'],
    ['GET', '/stats/'],
    ['GET', '/stats/container'],
    ['GET', '/debug/pprof/'],
    ['PUT', '/debug/flags/v'],
    ['GET', '/healthz/syncloop'],
    ['POST', '/metrics'],
  ];
  for (const [method, path] of requests) {
    t.equal((await send(port, path, method)).status, 401, `${method} ${path}: 401`);
  }
  t.same(gate.asked, requests.map(([method, path]) => `${method} ${path}`), 'each one reached the gate');
});

t.test('an allowed client then gets go-restful\'s 404 and 405', async (t) => {
  const port = await started(t);
  t.same(await send(port, '/pods/extra').then((r) => [r.status, r.body]), [404, '404: Page Not Found']);
  t.same(await send(port, '/stats/').then((r) => [r.status, r.body]), [404, '404: Page Not Found'], 'no route at the root of /stats/ (Go 1.20 without cadvisor JSON endpoints)');
  t.same(await send(port, '/run/ns/pod/c').then((r) => [r.status, r.body]), [405, '405: Method Not Allowed']);
  t.equal((await send(port, '/pods', 'POST')).status, 405);
  t.equal((await send(port, '/metrics', 'POST')).status, 404, 'a handler of its own answers any method (no registry given here: 404)');
  t.equal((await send(port, '/healthz', 'POST')).status, 200, 'healthz answers any method, as Go\'s mux.Handle does');
  t.equal((await send(port, '/configz', 'POST')).status, 200);
  t.equal((await send(port, '/logs/', 'HEAD')).status, 405, 'only GET below /logs/');
});

t.test('enableCAdvisorJSONEndpoints serves /spec/ (and redirects /spec)', async (t) => {
  const port = await started(t, { enableCAdvisorJSONEndpoints: true });
  const spec = await send(port, '/spec/');
  t.same([spec.status, JSON.parse(spec.body)], [200, { num_cores: 2 }]);
  t.same(await send(port, '/spec').then((r) => [r.status, r.headers.location]), [301, '/spec/']);
});

t.test('/debug/pprof/: cmdline, unknown profiles, and the route needs a name', async (t) => {
  const port = await started(t);
  const cmdline = await send(port, '/debug/pprof/cmdline');
  t.equal(cmdline.status, 200);
  t.equal(cmdline.body, [process.argv[1], ...process.argv.slice(2)].join('\x00'), "the process's arguments joined by NUL, as Go's pprof.Cmdline");
  t.equal(cmdline.headers['content-type'], 'text/plain; charset=utf-8');
  for (const name of ['heap', 'goroutine', 'nope']) {
    t.same(await send(port, `/debug/pprof/${name}`).then((r) => [r.status, r.body]), [404, 'Unknown profile\n'], `${name}: pprof's 404`);
  }
  t.equal((await send(port, '/debug/pprof/')).status, 404, 'Go: /{subpath:*} does not match an empty name');
  t.equal((await send(port, '/debug/pprof/cmdline', 'POST')).status, 405);
});

t.test('/debug/pprof/profile: a V8 CPU profile over `seconds` of the injected clock, one at a time', async (t) => {
  const clock = new FakeClock();
  const port = await started(t, { clock });
  const first = send(port, '/debug/pprof/profile?seconds=5');
  while (clock.pendingTimers() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const second = await send(port, '/debug/pprof/profile?seconds=1');
  t.same([second.status, second.body], [500, 'Could not enable CPU profiling: cpu profiling already in use\n'], 'a second profile meanwhile is refused');
  clock.step(4_999);
  t.equal(clock.pendingTimers(), 1, 'still profiling before 5 s');
  clock.step(1);
  const profile = await first;
  t.equal(profile.status, 200);
  t.equal(profile.headers['content-disposition'], 'attachment; filename="profile.cpuprofile"');
  const parsed = JSON.parse(profile.body) as { nodes: unknown[]; startTime: number; endTime: number };
  t.ok(parsed.nodes.length > 0 && parsed.endTime >= parsed.startTime, 'a .cpuprofile with nodes and times');
  const tooLong = await send(port, '/debug/pprof/profile?seconds=14400');
  t.same([tooLong.status, tooLong.body], [400, "profile duration exceeds server's WriteTimeout\n"]);
  // Go: a missing or bad `seconds` is 30.
  const defaulted = send(port, '/debug/pprof/profile?seconds=x');
  while (clock.pendingTimers() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  clock.step(29_999);
  t.equal(clock.pendingTimers(), 1);
  clock.step(1);
  t.equal((await defaulted).status, 200);
});

t.test('profiling off: Go\'s 405 below /debug/pprof/', async (t) => {
  const port = await started(t, { enableProfilingHandler: false });
  t.same(await send(port, '/debug/pprof/cmdline').then((r) => [r.status, r.body]), [405, 'profiling endpoint is disabled.']);
});

t.test('/debug/flags/v sets the log verbosity with PUT, as klog\'s setter answers', async (t) => {
  const set: number[] = [];
  const port = await started(t, { setLogVerbosity: (level) => set.push(level) });
  t.same(await send(port, '/debug/flags/v', 'PUT', '4').then((r) => [r.status, r.body]), [200, 'successfully set klog.logging.verbosity to 4']);
  t.same(await send(port, '/debug/flags/v').then((r) => [r.status, r.body]), [406, 'unsupported http method']);
  t.same(await send(port, '/debug/flags/v', 'PUT', 'loud').then((r) => [r.status, r.body]), [
    400,
    'failed set klog.logging.verbosity loud: strconv.ParseInt: parsing "loud": invalid syntax',
  ]);
  t.same(await send(port, '/debug/flags/v', 'PUT', '99999999999').then((r) => r.status), 400, 'out of int32 range');
  t.same(set, [4], 'only the valid level was set');
  const without = await started(t);
  t.same(await send(without, '/debug/flags/v', 'PUT', '4').then((r) => [r.status, r.body]), [405, 'flags endpoint is disabled.'], 'no setter: the handler is off');
});

t.test('debugging handlers off: the debug subtrees answer 405, configz, logs and flags are not paths', async (t) => {
  const port = await started(t, { enableDebuggingHandlers: false });
  for (const path of ['/run/ns/pod/c', '/exec/ns/pod/c', '/runningpods/', '/debug/pprof/cmdline', '/logs/x']) {
    t.same(await send(port, path).then((r) => [r.status, r.body]), [405, 'Debug endpoints are disabled.'], path);
  }
  t.equal((await send(port, '/run')).status, 301, 'Go registers /run/ only: /run is the mux redirect');
  t.equal((await send(port, '/configz')).status, 404);
  t.equal((await send(port, '/debug/flags/v', 'PUT', '1')).status, 404);
});
