import t from 'tap';
import { grpcTarget } from '../src/index.js';

t.equal(grpcTarget('unix:///run/containerd/containerd.sock'), 'unix:///run/containerd/containerd.sock');
t.equal(grpcTarget('/run/containerd/containerd.sock'), 'unix:///run/containerd/containerd.sock');
t.equal(grpcTarget('tcp://127.0.0.1:5000'), '127.0.0.1:5000');
t.equal(grpcTarget('tcp://[::1]:5000'), '[::1]:5000');
t.throws(() => grpcTarget('unix://relative.sock'), /unix socket path must be absolute/);
t.throws(() => grpcTarget('tcp://nohost'), /expected tcp:\/\/host:port/);
t.throws(() => grpcTarget('npipe:////./pipe/x'), /invalid CRI endpoint "npipe:\/\/\/\/.\/pipe\/x": only unix:\/\/ and tcp:\/\//);
