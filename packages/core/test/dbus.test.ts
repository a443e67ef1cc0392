// The D-Bus client: the wire codec byte for byte (D-Bus specification, "Marshaling"), and calls, errors and signals
// through a private dbus-daemon (Debian's dbus package).
import t from 'tap';
import { DBusConnection, DBusError, MessageType, busSocketPath, decodeMessage, encodeMessage, messageLength, splitSignature, systemBusAddress, type DBusMessage } from '../src/index.js';
import { startPrivateBus } from '../src/testing.js';

t.test('messages round-trip through the wire format', async (t) => {
  const message = {
    type: 1 as const,
    flags: 0,
    serial: 7,
    path: '/org/freedesktop/login1',
    interface: 'org.freedesktop.login1.Manager',
    member: 'Inhibit',
    destination: 'org.freedesktop.login1',
    signature: 'ssssa{sv}(tb)',
    body: ['shutdown', 'kubelet', 'why', 'delay', [['k', { signature: 'u', value: 3 }]], [5n, true]],
  };
  const bytes = encodeMessage(message);
  t.equal(bytes.length, messageLength(bytes), 'messageLength finds the whole message');
  t.equal(messageLength(bytes.subarray(0, bytes.length - 1)), undefined, 'one byte short: more is needed');
  t.match(decodeMessage(bytes), message);
});

t.test('the body bytes of systemd unit properties: a(sv) with t, b, s, as, au variants and an empty a(sa(sv))', async (t) => {
  const properties = [
    ['MemoryMax', { signature: 't', value: 18446744073709551615n }],
    ['Delegate', { signature: 'b', value: true }],
    ['Description', { signature: 's', value: 'x' }],
    ['Wants', { signature: 'as', value: ['a', 'bc'] }],
    ['DeviceAllow', { signature: 'au', value: [1, 2] }],
  ];
  const bytes = encodeMessage({ type: MessageType.MethodCall, flags: 0, serial: 1, signature: 'ssa(sv)a(sa(sv))', body: ['u.slice', 'replace', properties, []] });
  const headerEnd = bytes.length - bytes.readUInt32LE(4);
  const body = bytes.subarray(headerEnd);
  const le32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    return b;
  };
  const str = (s: string) => Buffer.concat([le32(s.length), Buffer.from(s), Buffer.alloc(1)]);
  const pad = (buf: Buffer, n: number) => Buffer.concat([buf, Buffer.alloc((n - (buf.length % n)) % n)]);
  // Built by hand from the specification: every offset is from the body's start, which is 8-aligned.
  let expected = Buffer.concat([str('u.slice')]); // 0..11
  expected = pad(expected, 4);
  expected = Buffer.concat([expected, str('replace')]); // 12..23
  const arrayLengthAt = expected.length; // 24
  expected = Buffer.concat([expected, le32(0)]); // 24..27, patched below
  expected = pad(expected, 8); // 32: structs are 8-aligned
  const arrayStart = expected.length;
  const entry = (name: string, sig: string, value: Buffer, valueAlign: number) => {
    expected = pad(expected, 8);
    expected = Buffer.concat([expected, str(name), Buffer.from([sig.length]), Buffer.from(sig), Buffer.alloc(1)]);
    expected = pad(expected, valueAlign);
    expected = Buffer.concat([expected, value]);
  };
  const u64 = Buffer.alloc(8);
  u64.writeBigUInt64LE(18446744073709551615n);
  entry('MemoryMax', 't', u64, 8);
  entry('Delegate', 'b', le32(1), 4);
  entry('Description', 's', str('x'), 4);
  // as: length, then each string 4-aligned (relative to the body).
  {
    expected = pad(expected, 8);
    expected = Buffer.concat([expected, str('Wants'), Buffer.from([2]), Buffer.from('as'), Buffer.alloc(1)]);
    expected = pad(expected, 4);
    const lengthAt = expected.length;
    expected = Buffer.concat([expected, le32(0)]);
    const start = expected.length;
    expected = Buffer.concat([expected, str('a')]);
    expected = pad(expected, 4);
    expected = Buffer.concat([expected, str('bc')]);
    expected.writeUInt32LE(expected.length - start, lengthAt);
  }
  entry('DeviceAllow', 'au', Buffer.concat([le32(8), le32(1), le32(2)]), 4);
  expected.writeUInt32LE(expected.length - arrayStart, arrayLengthAt);
  // The empty aux array: its length, then padding to the struct alignment even with no element.
  expected = pad(expected, 4);
  expected = Buffer.concat([expected, le32(0)]);
  expected = pad(expected, 8);
  t.same([...body], [...expected], 'the body is the marshaled bytes of the specification');
  t.match(decodeMessage(bytes).body, ['u.slice', 'replace', properties, []], 'and decodes back');
});

t.test('signatures and addresses', async (t) => {
  t.same(splitSignature('sa{sv}b(ta(sv))au'), ['s', 'a{sv}', 'b', '(ta(sv))', 'au']);
  t.throws(() => splitSignature('(s'), /D-Bus: unbalanced signature "\(s"|D-Bus: incomplete signature/);
  t.throws(() => splitSignature('sz'), { message: 'D-Bus: unknown type "z" in signature "sz"' });
  t.throws(() => encodeMessage({ type: 1, flags: 0, serial: 1, signature: 'ss', body: ['a'] }), { message: 'D-Bus: signature "ss" does not match 1 values' });
  t.equal(busSocketPath('unix:path=/run/dbus/system_bus_socket'), '/run/dbus/system_bus_socket');
  t.equal(busSocketPath('tcp:host=x;unix:abstract=/tmp/dbus-x'), '\0/tmp/dbus-x');
  t.throws(() => busSocketPath('tcp:host=localhost,port=1'), { message: 'D-Bus: no unix socket address in "tcp:host=localhost,port=1"' });
  t.equal(systemBusAddress({}), 'unix:path=/run/dbus/system_bus_socket');
  t.equal(systemBusAddress({ DBUS_SYSTEM_BUS_ADDRESS: 'unix:path=/x' }), 'unix:path=/x');
});

t.test('a private bus: names, method calls, error replies, signals, and the end of the daemon', async (t) => {
  const bus = await startPrivateBus(t);
  const server = await DBusConnection.connect(bus.address);
  const client = await DBusConnection.connect(bus.address);
  t.teardown(async () => {
    await client.close();
    await server.close();
  });
  t.match(client.uniqueName, /^:\d+\.\d+$/);
  t.equal(await server.requestName('org.example.Echo'), 1, 'primary owner');
  t.equal(await server.requestName('org.example.Echo'), 4, 'already the owner');
  server.onMethodCall((call) => {
    if (call.member === 'Echo') server.reply(call, call.signature ?? '', call.body);
    else server.replyError(call, 'org.example.Error.Nope', `no ${call.member}`);
  });
  const echoed = await client.call({ destination: 'org.example.Echo', path: '/org/example', interface: 'org.example.Echo', member: 'Echo', signature: 'ta(sv)', body: [2n ** 64n - 1n, [['au', { signature: 'au', value: [7] }]]] });
  t.same(echoed.body, [2n ** 64n - 1n, [['au', { signature: 'au', value: [7] }]]]);
  const error = await client.call({ destination: 'org.example.Echo', path: '/org/example', interface: 'org.example.Echo', member: 'Other' }).catch((e: unknown) => e);
  t.ok(error instanceof DBusError);
  t.match(error, { errorName: 'org.example.Error.Nope', message: 'org.example.Error.Nope: no Other' });
  const unknown = await client.getProperty('org.freedesktop.nobody', '/', 'org.freedesktop.nobody', 'X').catch((e: unknown) => e);
  t.match(unknown, { name: 'DBusError', errorName: 'org.freedesktop.DBus.Error.ServiceUnknown' }, "the bus's own error reply");

  const seen: DBusMessage[] = [];
  await client.addMatch("type='signal',interface='org.example.Echo',member='Ping'", (m) => seen.push(m));
  server.emitSignal('/org/example', 'org.example.Echo', 'Ping', 'u', [42]);
  await client.call({ destination: 'org.example.Echo', path: '/org/example', interface: 'org.example.Echo', member: 'Echo' });
  t.match(seen, [{ member: 'Ping', body: [42] }], 'the signal arrives before the later reply');

  const closed = new Promise<Error | undefined>((resolve) => client.onClose(resolve));
  const pending = client.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'GetId' });
  await pending;
  await bus.stop();
  await closed;
  t.equal(client.closed, true, 'the daemon gone, the connection is closed');
  await t.rejects(client.call({ destination: 'org.example.Echo', path: '/', interface: 'x.y', member: 'Z' }), /D-Bus: connection closed|ECONNRESET|EPIPE/);
  await bus.restart();
  const again = await DBusConnection.connect(bus.address);
  t.match(again.uniqueName, /^:\d+\.\d+$/, 'a new daemon on the same address');
  await again.close();
});

t.test('startPrivateBus fails loudly without the daemon', async (t) => {
  await t.rejects(startPrivateBus(t, { command: '/nonexistent/dbus-daemon' }), { message: /^private bus: cannot run \/nonexistent\/dbus-daemon \(Debian package dbus\): .*ENOENT/ });
});
