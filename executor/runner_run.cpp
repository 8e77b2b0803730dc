// Runner::run: chunked prefill of every sequence, greedy decode, and the rank's
// Measurements.
#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "executor/runner.h"
#include "executor/threads.h"

namespace dayzero::executor {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One prefill chunk of a replica: rows of its sequences (local indices) in order.
struct Chunk {
  std::vector<int> seqs;  // local sequence indices
  std::vector<int64_t> counts, tokens;
  std::vector<int64_t> last_rows;  // rows holding a sequence's last prompt token
  std::vector<int> last_seqs;      // ... and whose (local index)
};

// The replica's prompts, concatenated in order, cut into `n` nearly equal chunks.
std::vector<Chunk> chunks_of(const std::vector<std::vector<int64_t>>& prompts, const std::vector<int64_t>& mine,
                             int64_t n) {
  int64_t total = 0;
  for (int64_t i : mine) total += static_cast<int64_t>(prompts[static_cast<size_t>(i)].size());
  std::vector<Chunk> out(static_cast<size_t>(n));
  int64_t flat = 0;
  for (size_t j = 0; j < mine.size(); ++j) {
    const auto& p = prompts[static_cast<size_t>(mine[j])];
    for (size_t t = 0; t < p.size(); ++t, ++flat) {
      Chunk& c = out[static_cast<size_t>(flat * n / total)];
      if (c.seqs.empty() || c.seqs.back() != static_cast<int>(j)) {
        c.seqs.push_back(static_cast<int>(j));
        c.counts.push_back(0);
      }
      ++c.counts.back();
      c.tokens.push_back(p[t]);
      if (t + 1 == p.size()) {
        c.last_rows.push_back(static_cast<int64_t>(c.tokens.size()) - 1);
        c.last_seqs.push_back(static_cast<int>(j));
      }
    }
  }
  return out;
}

void append_rows(Tensor& all, const Tensor& rows, int64_t lo, int64_t n) {
  if (all.shape.empty()) all.shape = {0, rows.cols()};
  all.data.append(rows.row(lo), rows.row(lo) + n * rows.cols());
  all.shape[0] += n;
}
}  // namespace

RunResult Runner::run(const std::vector<std::vector<int64_t>>& prompts, int64_t decode_steps) {
  if (ran_) throw std::logic_error("Runner::run: a Runner runs once (its KV cache is full)");
  ran_ = true;
  const int64_t n_chunks = check_prompts(prompts, decode_steps);
  const auto n_seq = static_cast<int64_t>(prompts.size());
  RunResult res;
  Replica rep = begin_replica(n_seq, res.sequences);
  // The run's KV blocks at once, exactly (each sequence's prompt and fed tokens, in whole
  // blocks), as the engines allocate their pools before serving: a device's pools grown a
  // block at a time would hold up to half again what the run used.
  int64_t blocks = 0;
  for (int64_t i : rep.sequences) {
    const auto tokens = static_cast<int64_t>(prompts[static_cast<size_t>(i)].size()) + decode_steps;
    blocks += (tokens + plan_.kv_block_tokens - 1) / plan_.kv_block_tokens;
  }
  forward_->preallocate_kv(blocks);
  for (int pass = 0; pass < options_.warmup_passes; ++pass) warm_up(prompts, n_chunks, decode_steps);
  const double prefill_s = prefill(prompts, n_chunks, rep, res.sequences);
  const std::vector<double> decode_s = decode(n_seq, decode_steps, rep, res.sequences);
  res.measurements = measurements(prompts, rep, res.sequences, prefill_s, decode_s);
  return res;
}

Runner::Replica Runner::begin_replica(int64_t n_seq, std::vector<SequenceResult>& out) {
  Replica rep;
  rep.sequences = replica_sequences(n_seq, plan_.attention.dp, plan_.attn_dp_index(comm_.rank()));
  for (int64_t i : rep.sequences) {
    out.push_back(SequenceResult{i, {}, {}, {}});
    rep.kv_ids.push_back(forward_->add_sequence());
  }
  rep.next.assign(rep.sequences.size(), 0);
  return rep;
}

void Runner::set_recording(bool on) {
  timer_.set_recording(on);
  for (TimedCommunicator* c : {timed_world_.get(), timed_tp_.get(), timed_stage_.get()}) c->set_recording(on);
}

void Runner::warm_up(const std::vector<std::vector<int64_t>>& prompts, int64_t n_chunks, int64_t decode_steps) {
  set_recording(false);
  const auto n_seq = static_cast<int64_t>(prompts.size());
  std::vector<SequenceResult> scratch;
  Replica w = begin_replica(n_seq, scratch);
  prefill(prompts, n_chunks, w, scratch);
  if (decode_steps > 0) decode(n_seq, 1, w, scratch);
  for (int id : w.kv_ids) forward_->release_sequence(id);
  set_recording(true);
}

int64_t Runner::check_prompts(const std::vector<std::vector<int64_t>>& prompts, int64_t decode_steps) const {
  const int dp = plan_.attention.dp;
  if (prompts.empty()) throw std::runtime_error("no prompts");
  if (static_cast<int>(prompts.size()) < dp)
    throw std::runtime_error(std::to_string(prompts.size()) + " sequence(s) for " + std::to_string(dp) +
                             " attention-DP replicas: every replica needs at least one");
  if (decode_steps < 0) throw std::runtime_error("decode steps must be >= 0, not " + std::to_string(decode_steps));
  for (const auto& p : prompts) {
    if (p.empty()) throw std::runtime_error("a prompt is empty");
    for (int64_t t : p)
      if (t < 0 || t >= m_.config.vocab_size)
        throw std::runtime_error("prompt token " + std::to_string(t) + " is outside the vocabulary [0, " +
                                 std::to_string(m_.config.vocab_size) + ")");
  }
  // Every replica runs the same number of prefill chunks (the expert all-to-alls
  // pair up across replicas): enough for the longest replica.
  const int64_t chunk_tokens = plan_.prefill_chunk_tokens, n_seq = static_cast<int64_t>(prompts.size());
  int64_t n_chunks = 1;
  std::vector<int64_t> totals(static_cast<size_t>(dp), 0);
  for (int64_t i = 0; i < n_seq; ++i)
    totals[static_cast<size_t>(i % dp)] += static_cast<int64_t>(prompts[static_cast<size_t>(i)].size());
  for (int64_t t : totals) n_chunks = std::max(n_chunks, (t + chunk_tokens - 1) / chunk_tokens);
  for (int64_t t : totals)
    if (t < n_chunks)
      throw std::runtime_error("the replicas' prompts are too uneven for chunked prefill: one holds " +
                               std::to_string(t) + " tokens, another needs " + std::to_string(n_chunks) +
                               " chunks of prefill_chunk_tokens " + std::to_string(chunk_tokens));
  return n_chunks;
}

double Runner::placement_s() const {
  return backend_->weight_placement_seconds ? backend_->weight_placement_seconds() : 0.0;
}

double Runner::excluded_s() const {
  return timer_.overhead_s() + timed_world_->overhead_s() + timed_tp_->overhead_s() + timed_stage_->overhead_s() +
         placement_s();
}

double Runner::prefill(const std::vector<std::vector<int64_t>>& prompts, int64_t n_chunks, Replica& rep,
                       std::vector<SequenceResult>& out) {
  timer_.set_phase("prefill");
  const auto t0 = Clock::now();
  const double o0 = excluded_s();
  for (const Chunk& c : chunks_of(prompts, rep.sequences, n_chunks)) {
    std::vector<int> seqs;
    for (int j : c.seqs) seqs.push_back(rep.kv_ids[static_cast<size_t>(j)]);
    const Tensor logits = step(seqs, c.counts, c.tokens, options_.keep_logits ? nullptr : &c.last_rows);
    if (!par_.last_stage) continue;
    if (options_.keep_logits) {
      int64_t row = 0;
      for (size_t i = 0; i < c.seqs.size(); ++i) {
        append_rows(out[static_cast<size_t>(c.seqs[i])].prefill_logits, logits, row, c.counts[i]);
        row += c.counts[i];
      }
    }
    for (size_t i = 0; i < c.last_rows.size(); ++i) {
      const int64_t row = options_.keep_logits ? c.last_rows[i] : static_cast<int64_t>(i);
      rep.next[static_cast<size_t>(c.last_seqs[i])] = argmax({logits.row(row), static_cast<size_t>(logits.cols())});
    }
  }
  if (par_.last_stage) send_tokens(rep.next);
  else recv_tokens(rep.next);
  const double prefill_s = since(t0) - (excluded_s() - o0);
  for (size_t j = 0; j < rep.sequences.size(); ++j) out[j].tokens.push_back(rep.next[j]);
  return prefill_s;
}

// With PP the replica's sequences form m = min(pp, sequences) micro-batches that
// follow each other through the stages (the simulator's decode step): while the
// last stage runs micro-batch g, the first already runs g + 1; a micro-batch's
// next step starts when its tokens come back. m is the same on every replica (the
// expert all-to-alls pair up across replicas).
std::vector<double> Runner::decode(int64_t n_seq, int64_t decode_steps, Replica& rep,
                                   std::vector<SequenceResult>& out) {
  timer_.set_phase("decode");
  std::vector<double> decode_s;
  const size_t n_local = rep.sequences.size();
  const int64_t fewest = n_seq / plan_.attention.dp;  // sequences of the smallest replica (round robin)
  const int64_t micro = std::max<int64_t>(1, std::min<int64_t>(plan_.pp, fewest));
  std::vector<std::pair<size_t, size_t>> groups;  // local sequences [first, end) of each micro-batch
  for (int64_t g = 0; g < micro; ++g)
    groups.emplace_back(n_local * static_cast<size_t>(g) / static_cast<size_t>(micro),
                        n_local * static_cast<size_t>(g + 1) / static_cast<size_t>(micro));
  // A micro-batch's tokens, once known on this rank, onto its sequences.
  auto record = [&](size_t lo, size_t hi) {
    for (size_t j = lo; j < hi; ++j) out[j].tokens.push_back(rep.next[j]);
  };
  for (int64_t s = 0; s < decode_steps; ++s) {
    const auto t0 = Clock::now();
    const double o0 = excluded_s();
    for (const auto& [lo, hi] : groups) {
      const std::span<int64_t> tok(rep.next.data() + lo, hi - lo);
      if (!par_.last_stage && s > 0) {  // the micro-batch's tokens of step s - 1
        recv_tokens(tok);
        record(lo, hi);
      }
      const std::vector<int> seqs(rep.kv_ids.begin() + static_cast<std::ptrdiff_t>(lo),
                                  rep.kv_ids.begin() + static_cast<std::ptrdiff_t>(hi));
      const Tensor logits = step(seqs, std::vector<int64_t>(hi - lo, 1), tok, nullptr);
      if (!par_.last_stage) continue;
      for (size_t j = lo; j < hi; ++j) {
        const auto row = static_cast<int64_t>(j - lo);
        if (options_.keep_logits)
          out[j].decode_logits.push_back(
              Tensor({1, logits.cols()}, std::vector<float>(logits.row(row), logits.row(row) + logits.cols())));
        rep.next[j] = argmax({logits.row(row), static_cast<size_t>(logits.cols())});
      }
      send_tokens(tok);
      record(lo, hi);
    }
    decode_s.push_back(since(t0) - (excluded_s() - o0));
  }
  if (!par_.last_stage && decode_steps > 0)  // the last step's tokens
    for (const auto& [lo, hi] : groups) {
      recv_tokens(std::span<int64_t>(rep.next.data() + lo, hi - lo));
      record(lo, hi);
    }
  return decode_s;
}

Measurements Runner::measurements(const std::vector<std::vector<int64_t>>& prompts, const Replica& rep,
                                  const std::vector<SequenceResult>& sequences, double prefill_s,
                                  const std::vector<double>& decode_s) const {
  Measurements ms;
  {  // the config, by an absolute path when it is a file (validate reloads it from anywhere)
    std::error_code ec;
    const auto abs = std::filesystem::absolute(m_.config.source, ec);
    ms.model = !ec && std::filesystem::is_regular_file(abs) ? abs.lexically_normal().string() : m_.config.source;
  }
  ms.weights = weights_dir_.string();
  ms.world_size = comm_.size();
  ms.backend = std::string(backend_->name);
  ms.prompts = prompts;
  ms.tokens.assign(prompts.size(), {});
  for (const auto& sr : sequences) ms.tokens[static_cast<size_t>(sr.index)] = sr.tokens;
  ms.prefill_s = prefill_s;
  ms.decode_step_s = decode_s;
  const int r = comm_.rank();
  RankMeasurements rm;
  rm.rank = r;
  rm.stage = stage_;
  rm.attn_tp = par_.tp_rank;
  rm.attn_dp = plan_.attn_dp_index(r);
  rm.ep = par_.ep_rank;
  rm.sequences = rep.sequences;
  rm.load_s = load_s_ + placement_s();  // the weights' placement on the device, at their first use
  rm.prefill_s = prefill_s;
  rm.decode_step_s = decode_s;
  // Resident weights: what the kernels read in place (a rank's shards and unsplit
  // tensors, as stored or as converted at load) plus the copies (row-split shards,
  // float32 norm vectors), without the stored originals of those copies.
  rm.memory.weights_bytes =
      forward_->view_bytes() + forward_->shard_copy_bytes() + weights_->float_bytes() - weights_->float_source_bytes();
  rm.memory.kv_bytes = forward_->kv_bytes();
  rm.memory.workspace_bytes = activation_peak_bytes_;
  rm.memory.comm_buffer_bytes = comm_buffer_bytes_;
  rm.memory.runtime_bytes = runtime_bytes_;
  rm.memory.rss_hwm_bytes = rss_peak_bytes();
  if (backend_->device_memory) {
    const Backend::DeviceMemory d = backend_->device_memory();
    rm.memory.device_pool_peak_bytes = d.pool_peak_bytes;
    rm.memory.device_weights_bytes = d.weights_bytes;
    rm.memory.device_workspace_peak_bytes = d.workspace_peak_bytes;
    rm.memory.device_kv_bytes = d.kv_cache_peak_bytes;
    rm.memory.device_used_bytes = d.used_bytes;
    rm.memory.device_cached_bytes = d.cached_bytes;
    rm.memory.device_runtime_bytes = d.runtime_bytes;
  }
  ms.ranks = {rm};
  ms.plan = plan_;
  ms.machine = this_machine();
  ms.machine.kernel_threads = kernel_threads();
  ms.timing_iterations = options_.timing_iterations;
  ms.op_clock = timer_.device_clock() ? plan::OpClock::device : plan::OpClock::host;
  if (backend_->fp8_block_gemm) ms.fp8_block_gemm = backend_->fp8_block_gemm(ms.fp8_block_gemm_note);
  ms.ops = timer_.results();
  for (auto& o : ms.ops) o.rank = r;
  for (const auto* t : {timed_world_.get(), timed_tp_.get(), timed_stage_.get()})
    for (auto c : t->results()) {
      c.rank = r;
      ms.collectives.push_back(c);
    }
  return ms;
}

}  // namespace dayzero::executor
