// tma_pipeline: the staged tiles of `pipeline` loops copied by the copy engine
// (TMA) and synchronized by transaction-counting mbarriers (Plan::tma), with an
// optional producer role (Plan::producers). Runs on the lowered GroupIR, where the
// `pipeline` pass left those loops alone (compile.cpp gives it window 1 then).
//
// In: a loop from a `pipeline` nest (a For marked pipelined) whose body holds
// staging copies (global -> shared, synchronous, zero padding, no destination
// guard) and the ops that read the staged buffers, in any order the `pipeline`
// pass accepts (a copy may move to the top when nothing before it touches its
// buffer or writes global memory). Loops of another shape are left unchanged and
// counted (`skipped_reason` says why), as are loops inside a branch. A pipelined
// loop that holds another (the persistent loop over tiles) only encloses it.
//
// Out, with window W (stages) for a loop k in [lo, hi) whose execution is the
// e-th of its enclosing loops (base = e * (hi - lo); 0 for a top-level loop; or the
// loop's stage_base, which may then vary with the enclosing loops as its trip count
// does: the count of the loop's iterations the group ran before), so that iteration
// k handles stage j = base + k - lo, slot j % W:
//   - mbarriers full[W] (count 1) and empty[W] (count = the computing workers),
//     initialized at the top of the program, then a fence;
//   - produce(j): mbar.wait empty@(j % W) parity (j / W + 1) % 2 (the release of
//     the stage's previous use; the first W pass at once), mbar.expect_tx of the
//     stage's bytes, one tma per copy (boxes of at most 256 x 256), and the
//     leader's mbar.arrive on full@(j % W);
//   - consume(j): mbar.wait full@(j % W) parity (j / W) % 2, the body's other ops
//     reading version j % W, then mbar.arrive empty@(j % W) (release).
// Without producers every worker computes: a prologue loop produces stages
// base .. base + min(W, n) - 1, and iteration k consumes its stage, releases it
// and produces stage j + W into the same slot (when j + W is still in the loop).
// With P producers the program gets P more workers and one `roles` op after the
// fence: the producers run the loop nest producing every stage, the computing
// workers run the rest of the program consuming them (with warpgroup workers,
// registers per thread: producers 40, consumers what is left of the 64K register
// file, at most 256). Every op in the consumer role must be legal in a role and touch no shared
// memory but the reads of staged buffers (else a Plan error naming it): there are
// no fences in roles.
// With an asynchronous atom (wgmma), W >= 2 and a body of mmas alone, the mmas become
// async and one stays in flight: iteration k waits for mma k - 1 (mma.wait
// pending 1), then releases stage j - 1 and refills it; after the loop, mma.wait
// pending 0 and the last stage's release.
// Fences in the body are dropped when no op of the body writes memory (the
// mbarriers order the stages; a fence follows the loop); otherwise the fences among
// the consumers stay (the ones before the first consumer only ordered the copies).
//
// Clusters (cluster C > 1, with producers; group_ir.h, "clusters"): groups that
// stage the same tiles share the copies. Along the grid dimension d where the
// staged boxes that do not depend on d's coordinate carry the most bytes, the grid
// forms clusters of C groups (d's extent rounded up to a multiple of C: the
// groups past the edge stage zeros and store nothing, as at any ragged edge).
// Each such box is split in C parts (into whole panels where they divide, else
// across the destination's lines: a row-major buffer's rows), and rank
// r's producer copies part r, multicast to the whole cluster; every group still
// counts the stage's full bytes. A stage's slot is refilled in every group at
// once, so each group's `empty` counts the releases of every group's consumers
// (a cluster arrival, count C times the computing workers). cluster.sync follows
// the init fence (no group arrives on a peer's mbarrier before the peer initialized
// it) and ends the program (none leaves while a peer may still arrive on its).
// The pipeline loops' bounds must not depend on d (every group runs the same
// stages): a Plan error otherwise, as when no box is shared along any dimension.
#pragma once
#include <string>

#include "ir/group_ir.h"

namespace tessel {

struct TmaPipelineOptions {
  int window = 2;                // stages (W >= 1)
  int producers = 0;             // workers that only produce (a producer role)
  bool async_consumers = false;  // the atom runs asynchronously (wgmma): one mma in flight
  int cluster = 1;               // groups sharing their staged boxes (needs producers)
};

struct TmaPipelineStats {
  int loops_converted = 0;
  int loops_skipped = 0;
  std::string skipped_reason;
};

// Converts every pipeline loop it can. A Plan error (ErrorKind::Plan) when the
// producer role cannot be formed (the message names the op), or when producers are
// asked for and no loop could be converted.
TmaPipelineStats tma_pipeline(GroupProgram& program, const TmaPipelineOptions& options);

}  // namespace tessel
