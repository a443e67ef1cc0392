import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { runtimeapi as api } from '@kubelet-ts/cri-client';
import { RuntimeError, invalidArgument } from './errors.js';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * Normalizes an image reference as the docker reference library does (what containerd's CRI plugin
 * stores): `busybox` -> `docker.io/library/busybox:latest`, `foo/bar:1` -> `docker.io/foo/bar:1`,
 * `registry.local:5000/x` -> `registry.local:5000/x:latest`; a digest reference gets no tag.
 */
export function normalizeImageName(reference: string): string {
  const name = reference.trim();
  if (name === '') throw invalidArgument('image name must not be empty');
  let rest = name;
  let digest = '';
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at);
    rest = rest.slice(0, at);
  }
  let domain = 'docker.io';
  let path = rest;
  const slash = rest.indexOf('/');
  if (slash >= 0) {
    const first = rest.slice(0, slash);
    if (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase()) {
      domain = first;
      path = rest.slice(slash + 1);
    }
  }
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  if (path === '' || path.endsWith('/') || /[A-Z]/.test(path)) {
    throw invalidArgument(`invalid reference format: ${JSON.stringify(reference)}`);
  }
  const hasTag = path.lastIndexOf(':') > path.lastIndexOf('/');
  return `${domain}/${path}${hasTag || digest ? '' : ':latest'}${digest}`;
}

/** The image id the local runtime gives a normalized name: `sha256:` + sha256(name). */
export function imageIdFor(normalized: string): string {
  return `sha256:${sha256(normalized)}`;
}

interface ImageRecord {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  /** The name as the kubelet asked for it. */
  userSpecified: string;
  pulledAt: number;
}

export interface ImageStoreOptions {
  rootDir: string;
  /** Images (any form; compared normalized) whose pull fails as if the registry did not have them. */
  unpullableImages?: string[];
  now: () => number;
  /** Keep the list in `<rootDir>/images.json`. */
  persist: boolean;
}

/**
 * The local runtime's images: names only (nothing is downloaded), remembered in
 * `<rootDir>/images.json` so a restarted runtime keeps them.
 */
export class ImageStore {
  private readonly byId = new Map<string, ImageRecord>();
  private readonly byRef = new Map<string, ImageRecord>();
  private readonly unpullable: Set<string>;
  private readonly file: string;

  constructor(private readonly options: ImageStoreOptions) {
    this.file = join(options.rootDir, 'images.json');
    this.unpullable = new Set((options.unpullableImages ?? []).map((image) => normalizeImageName(image)));
  }

  load(): void {
    if (!this.options.persist) return;
    let records: ImageRecord[];
    try {
      records = JSON.parse(readFileSync(this.file, 'utf8')) as ImageRecord[];
    } catch {
      return;
    }
    for (const record of records) this.add(record);
  }

  private save(): void {
    if (!this.options.persist) return;
    mkdirSync(this.options.rootDir, { recursive: true });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify([...this.byId.values()], null, 1));
    renameSync(tmp, this.file);
  }

  private add(record: ImageRecord): void {
    this.byId.set(record.id, record);
    for (const ref of [...record.repoTags, ...record.repoDigests]) this.byRef.set(ref, record);
  }

  /** Finds an image by name (normalized), id, id without `sha256:`, or repo digest. */
  find(image: string): ImageRecord | undefined {
    if (image === '') return undefined;
    const direct = this.byId.get(image) ?? this.byId.get(`sha256:${image}`) ?? this.byRef.get(image);
    if (direct) return direct;
    try {
      return this.byRef.get(normalizeImageName(image));
    } catch {
      return undefined;
    }
  }

  /** The ref a container created from `image` reports: the image's id (computed when not pulled). */
  refFor(image: string): string {
    const found = this.find(image);
    if (found) return found.id;
    try {
      return imageIdFor(normalizeImageName(image));
    } catch {
      return '';
    }
  }

  /** The normalized name of an image a pull can get; NotFound (as a registry without it) for an unpullable one. */
  pullable(image: string): string {
    const normalized = normalizeImageName(image);
    if (this.unpullable.has(normalized) || normalized.includes('doesnotexist')) {
      throw new RuntimeError(
        'NotFound',
        `failed to pull and unpack image ${JSON.stringify(normalized)}: failed to resolve reference ` +
          `${JSON.stringify(normalized)}: ${normalized}: not found`,
      );
    }
    return normalized;
  }

  /** The id of an image already pulled under this normalized name, if any. */
  pulledId(normalized: string): string | undefined {
    return this.byRef.get(normalized)?.id;
  }

  /** Records the image (a plausible stable size unless `size` is given) and returns its id. */
  pull(image: string, size?: number): string {
    const normalized = this.pullable(image);
    const existing = this.byRef.get(normalized);
    if (existing) return existing.id;
    const id = imageIdFor(normalized);
    const at = normalized.indexOf('@');
    const repo = at >= 0 ? normalized.slice(0, at) : normalized.slice(0, normalized.lastIndexOf(':'));
    const digest = at >= 0 ? normalized.slice(at + 1) : `sha256:${sha256(`digest:${normalized}`)}`;
    const hash = parseInt(id.slice(7, 15), 16);
    const record: ImageRecord = {
      id,
      repoTags: at >= 0 ? [] : [normalized],
      repoDigests: [`${repo}@${digest}`],
      // A plausible size: 1 MiB to 65 MiB, stable per name.
      size: size ?? 1_048_576 + (hash % 64) * 1_048_576 + (hash % 1_048_576),
      userSpecified: image,
      pulledAt: this.options.now(),
    };
    this.add(record);
    this.save();
    return id;
  }

  remove(image: string): void {
    const record = this.find(image);
    if (!record) return;
    this.byId.delete(record.id);
    for (const ref of [...record.repoTags, ...record.repoDigests]) {
      if (this.byRef.get(ref) === record) this.byRef.delete(ref);
    }
    this.save();
  }

  status(image: string): api.ImageInit | null {
    const record = this.find(image);
    return record ? toImage(record) : null;
  }

  list(filter?: string): api.ImageInit[] {
    if (filter) {
      const record = this.find(filter);
      return record ? [toImage(record)] : [];
    }
    return [...this.byId.values()].map(toImage);
  }

  /** Total size of the recorded images and their count. */
  usage(): { bytes: number; count: number } {
    let bytes = 0;
    for (const record of this.byId.values()) bytes += record.size;
    return { bytes, count: this.byId.size };
  }
}

function toImage(record: ImageRecord): api.ImageInit {
  return {
    id: record.id,
    repoTags: record.repoTags,
    repoDigests: record.repoDigests,
    size: record.size,
    username: '',
    spec: { image: record.id, annotations: {} },
    pinned: false,
  };
}
