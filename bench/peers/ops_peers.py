# PyTorch softmax and layernorm at the bench's shapes, GB/s on the same formula
# (bytes read + written once / device time).
import torch, sys
torch.backends.cuda.matmul.allow_tf32 = False
def bench(f, *a):
    for _ in range(3): f(*a)
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10): f(*a)
        e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) * 100)  # us per call
    ts.sort(); return ts[len(ts) // 2]
for (m, n) in [(8192, 8192), (32768, 1024), (4096, 50257)]:
    for dt, eb in [(torch.float32, 4), (torch.bfloat16, 2)]:
        x = torch.randn(m, n, device="cuda", dtype=dt)
        g = torch.randn(n, device="cuda", dtype=dt); b = torch.randn(n, device="cuda", dtype=dt)
        t = bench(lambda x: torch.softmax(x, -1), x)
        print(f"| torch softmax {str(dt)[6:]} | {m}x{n} | {t:.1f} | {2*m*n*eb/t/1e3:.0f} |")
        t = bench(lambda x: torch.nn.functional.layer_norm(x, (n,), g, b, 1e-5), x)
        print(f"| torch layernorm {str(dt)[6:]} | {m}x{n} | {t:.1f} | {2*m*n*eb/t/1e3:.0f} |")
        sys.stdout.flush()
