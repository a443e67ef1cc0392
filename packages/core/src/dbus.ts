// A small D-Bus client (the wire protocol of the D-Bus specification): SASL EXTERNAL authentication, method
// calls and their replies, and signals, over a unix socket. Enough for logind and systemd's Manager; no unix fd passing (Node's
// net.Socket cannot receive SCM_RIGHTS), so methods answering with a file descriptor ("h") are out of reach.
import { connect, type Socket } from 'node:net';

/** A D-Bus value as this client reads and writes it; variants are [signature, value]. */
export type DBusValue = string | number | bigint | boolean | DBusValue[] | DBusVariant;
export interface DBusVariant {
  signature: string;
  value: DBusValue;
}

export const MessageType = { MethodCall: 1, MethodReturn: 2, Error: 3, Signal: 4 } as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

export interface DBusMessage {
  type: MessageType;
  flags: number;
  serial: number;
  path?: string;
  interface?: string;
  member?: string;
  errorName?: string;
  replySerial?: number;
  destination?: string;
  sender?: string;
  signature?: string;
  body: DBusValue[];
}

const FIELD = { path: 1, interface: 2, member: 3, errorName: 4, replySerial: 5, destination: 6, sender: 7, signature: 8, unixFds: 9 } as const;
const FIELD_SIGNATURE: Record<number, string> = { 1: 'o', 2: 's', 3: 's', 4: 's', 5: 'u', 6: 's', 7: 's', 8: 'g', 9: 'u' };
const ALIGN: Record<string, number> = { y: 1, b: 4, n: 2, q: 2, i: 4, u: 4, x: 8, t: 8, d: 8, s: 4, o: 4, g: 1, h: 4, a: 4, '(': 8, '{': 8, v: 1 };

/** Splits a signature into its complete types ("sa{sv}b" -> ["s", "a{sv}", "b"]). */
export function splitSignature(signature: string): string[] {
  const types: string[] = [];
  let i = 0;
  while (i < signature.length) {
    const end = completeTypeEnd(signature, i);
    types.push(signature.slice(i, end));
    i = end;
  }
  return types;
}

function completeTypeEnd(sig: string, start: number): number {
  const c = sig[start];
  if (c === undefined) throw new Error(`D-Bus: incomplete signature ${JSON.stringify(sig)}`);
  if (c === 'a') return completeTypeEnd(sig, start + 1);
  if (c === '(' || c === '{') {
    const close = c === '(' ? ')' : '}';
    let i = start + 1;
    while (sig[i] !== close) {
      if (i >= sig.length) throw new Error(`D-Bus: unbalanced signature ${JSON.stringify(sig)}`);
      i = completeTypeEnd(sig, i);
    }
    return i + 1;
  }
  if (!(c in ALIGN)) throw new Error(`D-Bus: unknown type ${JSON.stringify(c)} in signature ${JSON.stringify(sig)}`);
  return start + 1;
}

class Writer {
  private chunks: Buffer[] = [];
  length = 0;

  private push(buf: Buffer): void {
    this.chunks.push(buf);
    this.length += buf.length;
  }

  align(n: number): void {
    const pad = (n - (this.length % n)) % n;
    if (pad) this.push(Buffer.alloc(pad));
  }

  write(type: string, value: DBusValue): void {
    const c = type[0];
    this.align(ALIGN[c] ?? 1);
    const fixed = (size: number, fill: (b: Buffer) => void) => {
      const b = Buffer.alloc(size);
      fill(b);
      this.push(b);
    };
    switch (c) {
      case 'y':
        return fixed(1, (b) => b.writeUInt8(Number(value)));
      case 'b':
        return fixed(4, (b) => b.writeUInt32LE(value ? 1 : 0));
      case 'n':
        return fixed(2, (b) => b.writeInt16LE(Number(value)));
      case 'q':
        return fixed(2, (b) => b.writeUInt16LE(Number(value)));
      case 'i':
        return fixed(4, (b) => b.writeInt32LE(Number(value)));
      case 'u':
      case 'h':
        return fixed(4, (b) => b.writeUInt32LE(Number(value)));
      case 'x':
        return fixed(8, (b) => b.writeBigInt64LE(BigInt(value as number | bigint)));
      case 't':
        return fixed(8, (b) => b.writeBigUInt64LE(BigInt(value as number | bigint)));
      case 'd':
        return fixed(8, (b) => b.writeDoubleLE(Number(value)));
      case 's':
      case 'o': {
        const text = Buffer.from(String(value), 'utf8');
        fixed(4, (b) => b.writeUInt32LE(text.length));
        this.push(Buffer.concat([text, Buffer.alloc(1)]));
        return;
      }
      case 'g': {
        const text = Buffer.from(String(value), 'utf8');
        fixed(1, (b) => b.writeUInt8(text.length));
        this.push(Buffer.concat([text, Buffer.alloc(1)]));
        return;
      }
      case 'v': {
        const variant = value as DBusVariant;
        this.write('g', variant.signature);
        this.write(variant.signature, variant.value);
        return;
      }
      case 'a': {
        const elementType = type.slice(1);
        const lengthAt = this.length;
        fixed(4, () => undefined);
        this.align(ALIGN[elementType[0]] ?? 1);
        const start = this.length;
        for (const element of value as DBusValue[]) this.write(elementType, element);
        const b = Buffer.alloc(4);
        b.writeUInt32LE(this.length - start);
        this.patch(lengthAt, b);
        return;
      }
      case '(':
      case '{': {
        const fields = splitSignature(type.slice(1, -1));
        const values = value as DBusValue[];
        fields.forEach((field, i) => this.write(field, values[i]));
        return;
      }
      default:
        throw new Error(`D-Bus: cannot write type ${type}`);
    }
  }

  private patch(offset: number, data: Buffer): void {
    const whole = Buffer.concat(this.chunks);
    data.copy(whole, offset);
    this.chunks = [whole];
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

class Reader {
  constructor(
    private readonly buf: Buffer,
    public offset = 0,
  ) {}

  align(n: number): void {
    this.offset += (n - (this.offset % n)) % n;
  }

  read(type: string): DBusValue {
    const c = type[0];
    this.align(ALIGN[c] ?? 1);
    const b = this.buf;
    const take = (n: number) => {
      const at = this.offset;
      this.offset += n;
      if (this.offset > b.length) throw new Error('D-Bus: message truncated');
      return at;
    };
    switch (c) {
      case 'y':
        return b.readUInt8(take(1));
      case 'b':
        return b.readUInt32LE(take(4)) !== 0;
      case 'n':
        return b.readInt16LE(take(2));
      case 'q':
        return b.readUInt16LE(take(2));
      case 'i':
        return b.readInt32LE(take(4));
      case 'u':
      case 'h':
        return b.readUInt32LE(take(4));
      case 'x':
        return b.readBigInt64LE(take(8));
      case 't':
        return b.readBigUInt64LE(take(8));
      case 'd':
        return b.readDoubleLE(take(8));
      case 's':
      case 'o': {
        const length = b.readUInt32LE(take(4));
        const at = take(length + 1);
        return b.toString('utf8', at, at + length);
      }
      case 'g': {
        const length = b.readUInt8(take(1));
        const at = take(length + 1);
        return b.toString('utf8', at, at + length);
      }
      case 'v': {
        const signature = this.read('g') as string;
        return { signature, value: this.read(signature) };
      }
      case 'a': {
        const elementType = type.slice(1);
        const length = b.readUInt32LE(take(4));
        this.align(ALIGN[elementType[0]] ?? 1);
        const end = this.offset + length;
        const values: DBusValue[] = [];
        while (this.offset < end) values.push(this.read(elementType));
        return values;
      }
      case '(':
      case '{':
        return splitSignature(type.slice(1, -1)).map((field) => this.read(field));
      default:
        throw new Error(`D-Bus: cannot read type ${type}`);
    }
  }
}

/** Encodes a message (little endian, protocol version 1). */
export function encodeMessage(message: Omit<DBusMessage, 'body'> & { body?: DBusValue[] }): Buffer {
  const body = new Writer();
  const signature = message.signature ?? '';
  const types = splitSignature(signature);
  const values = message.body ?? [];
  if (types.length !== values.length) throw new Error(`D-Bus: signature ${JSON.stringify(signature)} does not match ${values.length} values`);
  types.forEach((type, i) => body.write(type, values[i]));
  const bodyBuf = body.toBuffer();
  const fields: DBusValue[] = [];
  for (const [name, code] of Object.entries(FIELD)) {
    const value = name === 'signature' ? (signature === '' ? undefined : signature) : (message as unknown as Record<string, DBusValue | undefined>)[name];
    if (value !== undefined) fields.push([code, { signature: FIELD_SIGNATURE[code], value }]);
  }
  const header = new Writer();
  header.write('y', 'l'.charCodeAt(0));
  header.write('y', message.type);
  header.write('y', message.flags);
  header.write('y', 1);
  header.write('u', bodyBuf.length);
  header.write('u', message.serial);
  header.write('a(yv)', fields);
  header.align(8);
  return Buffer.concat([header.toBuffer(), bodyBuf]);
}

/** The length of the first complete message in buf, or undefined when more bytes are needed. */
export function messageLength(buf: Buffer): number | undefined {
  if (buf.length < 16) return undefined;
  const little = buf[0] === 'l'.charCodeAt(0);
  const bodyLength = little ? buf.readUInt32LE(4) : buf.readUInt32BE(4);
  const fieldsLength = little ? buf.readUInt32LE(12) : buf.readUInt32BE(12);
  const headerLength = 16 + fieldsLength + ((8 - ((16 + fieldsLength) % 8)) % 8);
  const total = headerLength + bodyLength;
  return buf.length >= total ? total : undefined;
}

/** Decodes one complete message (little endian only: every D-Bus daemon on x86/arm Linux writes it). */
export function decodeMessage(buf: Buffer): DBusMessage {
  if (buf[0] !== 'l'.charCodeAt(0)) throw new Error('D-Bus: big-endian messages are not supported');
  const reader = new Reader(buf);
  reader.read('y');
  const type = reader.read('y') as MessageType;
  const flags = reader.read('y') as number;
  reader.read('y');
  const bodyLength = reader.read('u') as number;
  const serial = reader.read('u') as number;
  const fields = reader.read('a(yv)') as Array<[number, DBusVariant]>;
  reader.align(8);
  const message: DBusMessage = { type, flags, serial, body: [] };
  const names = Object.fromEntries(Object.entries(FIELD).map(([name, code]) => [code, name]));
  for (const [code, variant] of fields) {
    const name = names[code];
    if (name && name !== 'unixFds') (message as unknown as Record<string, DBusValue>)[name] = variant.value;
  }
  const end = reader.offset + bodyLength;
  const body = new Reader(buf.subarray(0, end), reader.offset);
  // Body alignment is relative to the message start, so the body reader keeps the message's offsets.
  message.body = splitSignature(message.signature ?? '').map((t) => body.read(t));
  return message;
}

export class DBusError extends Error {
  constructor(
    readonly errorName: string,
    message: string,
  ) {
    super(`${errorName}: ${message}`);
    this.name = 'DBusError';
  }
}

export interface MethodCall {
  destination: string;
  path: string;
  interface: string;
  member: string;
  signature?: string;
  body?: DBusValue[];
}

/** "unix:path=/run/dbus/system_bus_socket" (or unix:abstract=) to a socket path; the first unix address wins. */
export function busSocketPath(address: string): string {
  for (const part of address.split(';')) {
    const [transport, rest = ''] = part.split(':', 2);
    if (transport !== 'unix') continue;
    const params = Object.fromEntries(rest.split(',').map((kv) => kv.split('=', 2) as [string, string]));
    if (params.path) return decodeURIComponent(params.path);
    if (params.abstract) return `\0${decodeURIComponent(params.abstract)}`;
  }
  throw new Error(`D-Bus: no unix socket address in ${JSON.stringify(address)}`);
}

/** The system bus: $DBUS_SYSTEM_BUS_ADDRESS, else /run/dbus/system_bus_socket. */
export function systemBusAddress(env: NodeJS.ProcessEnv = process.env): string {
  return env.DBUS_SYSTEM_BUS_ADDRESS || 'unix:path=/run/dbus/system_bus_socket';
}

/** One connection to a bus: call(), onSignal(), and for tests or small services, onMethodCall() and reply helpers. */
export class DBusConnection {
  /** The unique name the bus gave us (":1.42"). */
  uniqueName = '';
  private serial = 0;
  private buffer: Buffer = Buffer.alloc(0);
  private readonly pending = new Map<number, { resolve: (m: DBusMessage) => void; reject: (e: Error) => void }>();
  private readonly signalHandlers = new Set<(m: DBusMessage) => void>();
  private methodHandler?: (m: DBusMessage) => void;
  private closedError?: Error;
  private readonly closeHandlers = new Set<(error?: Error) => void>();

  private constructor(private readonly socket: Socket) {}

  /** Connects, authenticates (EXTERNAL, as our uid) and says Hello. */
  static async connect(address: string, options: { timeoutMs?: number } = {}): Promise<DBusConnection> {
    const socket = connect(busSocketPath(address));
    const timer = setTimeout(() => socket.destroy(new Error(`D-Bus: timed out connecting to ${address}`)), options.timeoutMs ?? 5000);
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      const uid = (process.getuid?.() ?? 0).toString();
      socket.write(Buffer.concat([Buffer.alloc(1), Buffer.from(`AUTH EXTERNAL ${Buffer.from(uid).toString('hex')}\r\n`)]));
      const line = await readLine(socket);
      if (!line.startsWith('OK ')) throw new Error(`D-Bus: authentication refused: ${line}`);
      socket.write('BEGIN\r\n');
    } catch (error) {
      socket.destroy();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    const connection = new DBusConnection(socket);
    connection.listen();
    const helloTimer = setTimeout(() => socket.destroy(new Error(`D-Bus: no answer to Hello from ${address}`)), options.timeoutMs ?? 5000);
    try {
      const hello = await connection.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'Hello' });
      connection.uniqueName = hello.body[0] as string;
    } finally {
      clearTimeout(helloTimer);
    }
    return connection;
  }

  private listen(): void {
    this.socket.on('data', (chunk: Buffer) => {
      this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
      for (;;) {
        const length = messageLength(this.buffer);
        if (length === undefined) break;
        const raw = this.buffer.subarray(0, length);
        this.buffer = this.buffer.subarray(length);
        let message: DBusMessage;
        try {
          message = decodeMessage(raw);
        } catch (error) {
          this.socket.destroy(error as Error);
          return;
        }
        this.dispatch(message);
      }
    });
    const onClose = (error?: Error) => {
      if (this.closedError) return;
      this.closedError = error ?? new Error('D-Bus: connection closed');
      for (const { reject } of this.pending.values()) reject(this.closedError);
      this.pending.clear();
      for (const handler of this.closeHandlers) handler(error);
    };
    this.socket.on('error', onClose);
    this.socket.on('close', () => onClose());
  }

  private dispatch(message: DBusMessage): void {
    if (message.type === MessageType.MethodReturn || message.type === MessageType.Error) {
      const waiter = message.replySerial === undefined ? undefined : this.pending.get(message.replySerial);
      if (!waiter) return;
      this.pending.delete(message.replySerial!);
      if (message.type === MessageType.Error) waiter.reject(new DBusError(message.errorName ?? 'org.freedesktop.DBus.Error.Failed', String(message.body[0] ?? '')));
      else waiter.resolve(message);
    } else if (message.type === MessageType.Signal) {
      for (const handler of this.signalHandlers) handler(message);
    } else if (message.type === MessageType.MethodCall) {
      this.methodHandler?.(message);
    }
  }

  private send(message: Omit<DBusMessage, 'serial' | 'body' | 'flags'> & { body?: DBusValue[]; flags?: number }): number {
    if (this.closedError) throw this.closedError;
    const serial = ++this.serial;
    this.socket.write(encodeMessage({ flags: 0, ...message, serial }));
    return serial;
  }

  /** Calls a method; resolves with the reply, rejects with a DBusError or when the connection closes. */
  call(method: MethodCall): Promise<DBusMessage> {
    return new Promise((resolve, reject) => {
      try {
        const serial = this.send({ type: MessageType.MethodCall, ...method });
        this.pending.set(serial, { resolve, reject });
      } catch (error) {
        reject(error as Error);
      }
    });
  }

  /** org.freedesktop.DBus.Properties.Get: the property's value (the variant unwrapped). */
  async getProperty(destination: string, path: string, iface: string, name: string): Promise<DBusValue> {
    const reply = await this.call({ destination, path, interface: 'org.freedesktop.DBus.Properties', member: 'Get', signature: 'ss', body: [iface, name] });
    return (reply.body[0] as DBusVariant).value;
  }

  /** Subscribes to signals matching the rule (org.freedesktop.DBus.AddMatch); returns the unsubscribe function. */
  async addMatch(rule: string, handler: (m: DBusMessage) => void): Promise<() => void> {
    this.signalHandlers.add(handler);
    try {
      await this.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'AddMatch', signature: 's', body: [rule] });
    } catch (error) {
      this.signalHandlers.delete(handler);
      throw error;
    }
    return () => this.signalHandlers.delete(handler);
  }

  /**
   * org.freedesktop.DBus.RequestName: asks the bus for a well-known name; resolves with the bus's answer (1 primary
   * owner, 2 in queue, 3 exists, 4 already owner).
   */
  async requestName(name: string, flags = 0): Promise<number> {
    const reply = await this.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'RequestName', signature: 'su', body: [name, flags] });
    return reply.body[0] as number;
  }

  emitSignal(path: string, iface: string, member: string, signature: string, body: DBusValue[]): void {
    this.send({ type: MessageType.Signal, path, interface: iface, member, signature, body });
  }

  /** Serves method calls sent to this connection (a test's fake service). */
  onMethodCall(handler: (m: DBusMessage) => void): void {
    this.methodHandler = handler;
  }

  reply(call: DBusMessage, signature = '', body: DBusValue[] = []): void {
    this.send({ type: MessageType.MethodReturn, replySerial: call.serial, destination: call.sender, signature, body });
  }

  replyError(call: DBusMessage, errorName: string, message: string): void {
    this.send({ type: MessageType.Error, replySerial: call.serial, destination: call.sender, errorName, signature: 's', body: [message] });
  }

  /** Called once when the connection closes or fails. */
  onClose(handler: (error?: Error) => void): void {
    this.closeHandlers.add(handler);
  }

  get closed(): boolean {
    return this.closedError !== undefined;
  }

  close(): Promise<void> {
    if (this.socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.end();
      this.socket.destroySoon();
    });
  }
}

function readLine(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const onData = (chunk: Buffer) => {
      data += chunk.toString('latin1');
      const end = data.indexOf('\r\n');
      if (end < 0) return;
      cleanup();
      // Anything after the line would be a message, which the server only sends after BEGIN.
      resolve(data.slice(0, end));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onClose = () => {
      cleanup();
      reject(new Error('D-Bus: connection closed during authentication'));
    };
    const cleanup = () => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
    };
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
  });
}
