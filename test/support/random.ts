// The suite's one seeded generator, so a failing random test can be replayed from its seed.

/** A tiny deterministic PRNG: `next(n)` is an integer in [0, n). */
export function createRandom(seed: number): (n: number) => number {
	let state = seed >>> 0;
	return (n) => {
		state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
		return (state >>> 16) % n; // The low bits of an LCG cycle quickly.
	};
}
