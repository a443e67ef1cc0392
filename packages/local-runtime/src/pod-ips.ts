// Pod IPs for simulated sandboxes: distinct addresses from an IPv4 range, as a CNI bridge plugin's host-local IPAM
// hands them out (the range's first address is the gateway's), freed when the sandbox is removed.

const toNumber = (ip: string): number => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
const toText = (n: number): string => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');

/** Allocates the host addresses of an IPv4 CIDR (network + 2 .. broadcast - 1), reusing released ones last. */
export class PodIPAllocator {
  readonly cidr: string;
  private readonly first: number;
  private readonly last: number;
  private next: number;
  private readonly used = new Set<number>();

  constructor(cidr: string) {
    const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr.trim());
    const octets = match?.slice(1, 5).map(Number);
    const bits = Number(match?.[5]);
    if (!match || octets!.some((o) => o > 255) || bits < 8 || bits > 30) {
      throw new Error(`invalid pod CIDR ${JSON.stringify(cidr)}: want an IPv4 range a.b.c.d/n with n from 8 to 30`);
    }
    const size = 2 ** (32 - bits);
    const network = Math.floor(toNumber(octets!.join('.')) / size) * size;
    this.cidr = `${toText(network)}/${bits}`;
    this.first = network + 2;
    this.last = network + size - 2;
    this.next = this.first;
  }

  /** The next free address, or undefined when every one is in use. */
  allocate(): string | undefined {
    const count = this.last - this.first + 1;
    for (let i = 0; i < count; i++) {
      const candidate = this.next;
      this.next = candidate === this.last ? this.first : candidate + 1;
      if (!this.used.has(candidate)) {
        this.used.add(candidate);
        return toText(candidate);
      }
    }
    return undefined;
  }

  release(ip: string): void {
    this.used.delete(toNumber(ip));
  }

  /** Marks an address in use (a sandbox kept from before). */
  reserve(ip: string): void {
    const n = toNumber(ip);
    if (n >= this.first && n <= this.last) this.used.add(n);
  }
}
