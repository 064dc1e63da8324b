// CPU workload for the Rust naming test: functions in a module, a trait
// method and a generic function burn CPU in fixed proportions of
// iterations (1 : 2 : 3 : 2), on the main thread and a worker thread.
// perf record/report is the judge of the shares and names.
// Usage: rust_split SECONDS
use std::hint::black_box;
use std::time::{Duration, Instant};

mod work {
    #[inline(never)]
    pub fn collatz(iters: u64) -> u64 {
        let mut steps = 0u64;
        let mut n = 27u64 + std::hint::black_box(0);
        for _ in 0..iters {
            n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
            if n == 1 {
                n = 27 + steps % 7;
            }
            steps = steps.wrapping_add(n);
        }
        steps
    }

    #[inline(never)]
    pub fn fnv_mix(iters: u64) -> u64 {
        let mut h = 0xcbf29ce484222325u64 ^ std::hint::black_box(1);
        for i in 0..iters {
            h = (h ^ i).wrapping_mul(0x100000001b3) ^ (h >> 11);
        }
        h
    }
}

pub trait Kernel {
    fn run(&self, iters: u64) -> u64;
}

pub struct Xorshift {
    pub seed: u64,
}

impl Kernel for Xorshift {
    #[inline(never)]
    fn run(&self, iters: u64) -> u64 {
        let mut x = self.seed | 1;
        for _ in 0..iters {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x = x.wrapping_add(black_box(3));
        }
        x
    }
}

#[inline(never)]
pub fn accumulate<T: Copy + Into<u64>>(v: T, iters: u64) -> u64 {
    let mut a = v.into();
    for i in 0..iters {
        a = a.rotate_left(5) ^ i.wrapping_mul(0x9e3779b97f4a7c15);
    }
    a
}

fn burn(deadline: Instant, scale: u64) -> u64 {
    let k = Xorshift { seed: 7 };
    let mut sink = 0u64;
    while Instant::now() < deadline {
        let n = black_box(20_000u64) * scale;
        sink ^= work::collatz(n);
        sink ^= work::fnv_mix(2 * n);
        sink ^= k.run(3 * n);
        sink ^= accumulate::<u32>(black_box(5u32), 2 * n);
    }
    sink
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let worker = std::thread::Builder::new()
        .name("worker".into())
        .spawn(move || burn(deadline, 1))
        .expect("spawn");
    let a = burn(deadline, 1);
    let b = worker.join().expect("join");
    println!("sink {}", a ^ b);
}
