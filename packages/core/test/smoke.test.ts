import t from 'tap';
import { placeholder } from '../src/index.js';
t.equal(placeholder, 1);
