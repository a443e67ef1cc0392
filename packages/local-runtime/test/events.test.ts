import t from 'tap';
import type { runtimeapi as api } from '@kubelet-ts/cri-client';
import { runContainer, startRuntime, waitExited, waitFor } from './helpers.js';

t.test('GetContainerEvents sees created, started, stopped, deleted in order', async (t) => {
  const h = await startRuntime(t);
  const events: api.ContainerEventResponse[] = [];
  const abort = new AbortController();
  const otherEvents: api.ContainerEventResponse[] = [];
  const consume = async (into: api.ContainerEventResponse[], signal?: AbortSignal) => {
    try {
      for await (const event of h.rs.getContainerEvents({ signal })) into.push(event);
    } catch (error) {
      if (!signal?.aborted) throw error;
    }
  };
  const first = consume(events, abort.signal);
  const second = consume(otherEvents);
  // Let the streams open before anything happens.
  await new Promise((resolve) => setTimeout(resolve, 100));

  const { sandboxId, containerId } = await runContainer(h, 'ev', ['sh', '-c', 'exit 2']);
  await waitExited(h, containerId);
  await h.rs.removeContainer(containerId);
  await waitFor(() => events.length >= 4 && otherEvents.length >= 4, 5000, 'four events');
  t.same(
    events.map((e) => e.containerEventType),
    ['CONTAINER_CREATED_EVENT', 'CONTAINER_STARTED_EVENT', 'CONTAINER_STOPPED_EVENT', 'CONTAINER_DELETED_EVENT'],
  );
  t.same(otherEvents.map((e) => e.containerEventType), events.map((e) => e.containerEventType), 'every stream gets every event');
  for (const event of events) {
    t.equal(event.containerId, containerId);
    t.equal(event.podSandboxStatus?.id, sandboxId);
    t.ok(Number(event.createdAt) > 0);
  }
  t.same(events[1].containersStatuses.map((s) => s.state), ['CONTAINER_RUNNING']);
  t.same(events[2].containersStatuses.map((s) => [s.state, s.exitCode]), [['CONTAINER_EXITED', 2]]);
  t.same(events[3].containersStatuses, [], 'the deleted container is gone from its sandbox');

  abort.abort();
  await first;
  // stop() ends the remaining stream cleanly.
  h.is.close();
  await h.runtime.stop();
  await second;
  t.pass('streams ended');
  h.rs.close();
});
