// /metrics/resource (Go 1.20: pkg/kubelet/metrics/collectors/resource_metrics.go): CPU and memory of
// the node, pods and containers from the summary provider's getCPUAndMemoryStats().
import { errorText, defaultLogger, type Logger } from '@kubelet-ts/core';
import type { ContainerStats, NodeStats, PodStats, Summary, SummarySource } from './api.js';
import { renderFamilies, timeToMs, type MetricFamily, type Sample } from './prometheus-text.js';

// component-base prefixes the HELP of every metric with its stability level; all of these are ALPHA in 1.20.
const ALPHA = '[ALPHA] ';
const NANOS_PER_SECOND = 1e9;

/**
 * The /metrics/resource body for a summary; `null` means getting the summary failed, which Go
 * reports as `scrape_error 1` and nothing else.
 */
export function renderResourceMetrics(summary: Summary | null): string {
  const nodeCpu: Sample[] = [];
  const nodeMemory: Sample[] = [];
  const containerCpu: Sample[] = [];
  const containerMemory: Sample[] = [];
  const containerStart: Sample[] = [];
  const podCpu: Sample[] = [];
  const podMemory: Sample[] = [];

  if (summary) {
    collectNode(summary.node, nodeCpu, nodeMemory);
    for (const pod of summary.pods) {
      for (const container of pod.containers) {
        const labels = { container: container.name, pod: pod.podRef.name, namespace: pod.podRef.namespace };
        collectContainerStartTime(container, labels, containerStart);
        collectCpu(container, labels, containerCpu);
        collectMemory(container, labels, containerMemory);
      }
      const labels = { pod: pod.podRef.name, namespace: pod.podRef.namespace };
      collectCpu(pod, labels, podCpu);
      collectMemory(pod, labels, podMemory);
    }
  }

  const families: MetricFamily[] = [
    { name: 'node_cpu_usage_seconds_total', help: `${ALPHA}Cumulative cpu time consumed by the node in core-seconds`, type: 'counter', samples: nodeCpu },
    { name: 'node_memory_working_set_bytes', help: `${ALPHA}Current working set of the node in bytes`, type: 'gauge', samples: nodeMemory },
    {
      name: 'container_start_time_seconds',
      help: `${ALPHA}Start time of the container since unix epoch in seconds`,
      type: 'gauge',
      samples: containerStart,
    },
    {
      name: 'container_cpu_usage_seconds_total',
      help: `${ALPHA}Cumulative cpu time consumed by the container in core-seconds`,
      type: 'counter',
      samples: containerCpu,
    },
    {
      name: 'container_memory_working_set_bytes',
      help: `${ALPHA}Current working set of the container in bytes`,
      type: 'gauge',
      samples: containerMemory,
    },
    { name: 'pod_cpu_usage_seconds_total', help: `${ALPHA}Cumulative cpu time consumed by the pod in core-seconds`, type: 'counter', samples: podCpu },
    { name: 'pod_memory_working_set_bytes', help: `${ALPHA}Current working set of the pod in bytes`, type: 'gauge', samples: podMemory },
    {
      name: 'scrape_error',
      help: `${ALPHA}1 if there was an error while getting container metrics, 0 otherwise`,
      type: 'gauge',
      samples: [{ labels: {}, value: summary ? 0 : 1 }],
    },
  ];
  return renderFamilies(families);
}

/**
 * Gets CPU and memory stats and renders them; a failure is logged and becomes `scrape_error 1`, as
 * the Go collector does, so the endpoint still answers 200.
 */
export async function scrapeResourceMetrics(provider: Pick<SummarySource, 'getCPUAndMemoryStats'>, logger: Logger = defaultLogger): Promise<string> {
  let summary: Summary | null = null;
  try {
    summary = await provider.getCPUAndMemoryStats();
  } catch (err) {
    logger.error('Error getting summary for resourceMetric prometheus endpoint', err, { reason: errorText(err) });
  }
  return renderResourceMetrics(summary);
}

function collectNode(node: NodeStats, cpu: Sample[], memory: Sample[]): void {
  collectCpu(node, {}, cpu);
  collectMemory(node, {}, memory);
}

function collectCpu(s: Pick<NodeStats | PodStats | ContainerStats, 'cpu'>, labels: Record<string, string>, out: Sample[]): void {
  if (!s.cpu || s.cpu.usageCoreNanoSeconds === undefined) return;
  out.push({ labels, value: s.cpu.usageCoreNanoSeconds / NANOS_PER_SECOND, timestampMs: timeToMs(s.cpu.time) });
}

function collectMemory(s: Pick<NodeStats | PodStats | ContainerStats, 'memory'>, labels: Record<string, string>, out: Sample[]): void {
  if (!s.memory || s.memory.workingSetBytes === undefined) return;
  out.push({ labels, value: s.memory.workingSetBytes, timestampMs: timeToMs(s.memory.time) });
}

function collectContainerStartTime(container: ContainerStats, labels: Record<string, string>, out: Sample[]): void {
  const startMs = timeToMs(container.startTime);
  // Go skips a zero (or pre-epoch) start time: StartTime.Unix() <= 0.
  if (startMs === undefined || Math.floor(startMs / 1000) <= 0) return;
  out.push({ labels, value: startMs / 1000 });
}
