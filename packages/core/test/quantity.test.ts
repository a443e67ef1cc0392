import t from 'tap';
import { ERR_FORMAT_WRONG, ERR_SUFFIX, Quantity, quantityMilliValue, quantityValue } from '../src/index.js';

t.test('parses every suffix and prints Go canonical form', async (t) => {
  const cases: Array<[string, string, string]> = [
    // input, canonical, format
    ['100m', '100m', 'DecimalSI'],
    ['0.5', '500m', 'DecimalSI'],
    ['1.5', '1500m', 'DecimalSI'],
    ['4', '4', 'DecimalSI'],
    ['110', '110', 'DecimalSI'],
    ['2000', '2k', 'DecimalSI'],
    ['1500', '1500', 'DecimalSI'],
    ['1G', '1G', 'DecimalSI'],
    ['1000M', '1G', 'DecimalSI'],
    ['12n', '12n', 'DecimalSI'],
    ['5u', '5u', 'DecimalSI'],
    ['1E', '1E', 'DecimalSI'],
    ['100Mi', '100Mi', 'BinarySI'],
    ['1024Ki', '1Mi', 'BinarySI'],
    ['1.5Gi', '1536Mi', 'BinarySI'],
    ['1Ti', '1Ti', 'BinarySI'],
    ['512Ki', '512Ki', 'BinarySI'],
    ['1e3', '1e3', 'DecimalExponent'],
    ['1E6', '1e6', 'DecimalExponent'],
    ['-100Mi', '-100Mi', 'BinarySI'],
    ['+5', '5', 'DecimalSI'],
    ['0', '0', 'DecimalSI'],
    ['0Gi', '0', 'BinarySI'],
    ['.5', '500m', 'DecimalSI'],
  ];
  for (const [input, want, format] of cases) {
    const q = Quantity.parse(input);
    t.equal(q.toString(), want, `${input} -> ${want}`);
    t.equal(q.format, format, `${input} is ${format}`);
  }
});

t.test('BinarySI values that are not whole multiples print as Go does', async (t) => {
  t.equal(Quantity.fromValue(1023, 'BinarySI').toString(), '1023', 'below 1024: decimal');
  t.equal(Quantity.fromValue(96636764000, 'BinarySI').toString(), '96636764000', 'integer, not a multiple of 1024: plain');
  t.equal(Quantity.fromValue(16364424 * 1024, 'BinarySI').toString(), '16364424Ki');
  t.equal(Quantity.parse('0.1Ki').toString(), '102400m', 'fractional binary falls back to decimal');
  t.equal(Quantity.fromMilli(4000).toString(), '4');
  t.equal(Quantity.fromMilli(3900).toString(), '3900m');
});

t.test('arithmetic keeps the receiver format; value() rounds up', async (t) => {
  const mem = Quantity.parse('8Gi');
  t.equal(mem.sub(Quantity.parse('100Mi')).toString(), '8092Mi');
  t.equal(Quantity.parse('100m').add(Quantity.parse('100m')).toString(), '200m');
  t.equal(Quantity.parse('1Gi').cmp(Quantity.parse('1024Mi')), 0);
  t.ok(Quantity.parse('1Gi').equals(Quantity.parse('1073741824')));
  t.equal(Quantity.parse('1').cmp(Quantity.parse('999m')), 1);
  t.equal(Quantity.parse('100m').value(), 1);
  t.equal(Quantity.parse('1500m').milliValue(), 1500);
  t.equal(Quantity.parse('-1').sign(), -1);
  t.ok(Quantity.zero().isZero());
  t.equal(JSON.stringify({ q: Quantity.parse('2Gi') }), '{"q":"2Gi"}');
  t.equal(Quantity.parse('1.0000000001').toString(), '1000000001n', 'precision beyond nano rounds up');
});

t.test('errors carry Go messages', async (t) => {
  for (const bad of ['', 'abc', '1.2.3', '100Mx', '10 Mi', 'Mi', '1KB']) {
    t.throws(() => Quantity.parse(bad), { message: ERR_FORMAT_WRONG }, JSON.stringify(bad));
  }
  for (const bad of ['100K', '1mi', '5Kii']) {
    t.throws(() => Quantity.parse(bad), { message: ERR_SUFFIX }, JSON.stringify(bad));
  }
});

t.test('API values: fromJSON reads strings, numbers and absence as Go unmarshals them', async (t) => {
  t.equal(Quantity.fromJSON(' 100m ').toString(), '100m', 'surrounding spaces ignored');
  t.equal(Quantity.fromJSON(2).toString(), '2', 'a number from a YAML manifest');
  t.equal(Quantity.fromJSON(0.5).toString(), '500m');
  t.equal(Quantity.fromJSON(1e21).toString(), '1e21', 'numbers JavaScript prints with an exponent');
  t.ok(Quantity.fromJSON(undefined).isZero());
  t.ok(Quantity.fromJSON(null).isZero());
  t.throws(() => Quantity.fromJSON('lots'), { message: ERR_FORMAT_WRONG });
  t.throws(() => Quantity.parse('1constructor'), { message: ERR_FORMAT_WRONG }, 'object prototype names are no suffixes');
  t.throws(() => Quantity.parse('1toString'), { message: ERR_FORMAT_WRONG });
});

t.test('quantityValue and quantityMilliValue are Go\'s Value() and MilliValue(), exactly', async (t) => {
  t.equal(quantityMilliValue('100m'), 100);
  t.equal(quantityMilliValue('0.1'), 100);
  t.equal(quantityMilliValue('1n'), 1, 'rounded up');
  t.equal(quantityValue('1m'), 1, 'rounded up');
  t.equal(quantityValue('1.5Ki'), 1536);
  t.equal(quantityMilliValue('1.1Gi'), 1181116006400);
  t.equal(quantityValue(undefined), 0);
  t.equal(quantityValue(3), 3);
  // Where floating point went wrong: fractions below a millionth, and large values with a fraction.
  t.equal(quantityValue('1.0000001'), 2, 'a ten-millionth above 1 rounds up to 2');
  t.equal(quantityValue('1e-7'), 1);
  t.equal(quantityValue('123456.0000001'), 123457);
  t.equal(quantityMilliValue('1.0000000001'), 1001, 'a nano step above 1 (rounded up at parse) is 1001m');
  t.equal(quantityMilliValue('100000000000.1'), 100000000000100, 'not ...101 from float noise');
  t.equal(quantityValue('0.1E'), 1e17, 'not 99999999999999980');
  t.throws(() => quantityValue('abc'), { message: ERR_FORMAT_WRONG });
  t.throws(() => quantityMilliValue('1Kx'), { message: ERR_FORMAT_WRONG });
  t.throws(() => quantityValue('1mi'), { message: ERR_SUFFIX });
});
