// The forward's MoE layer: routing, expert dispatch over the stage's ranks
// (all-to-all), the experts' FFNs, return (all-to-all) and combine.
//
// The stage's ranks split the experts as moe_tp x ep x moe_dp (Plan rank
// arithmetic). Each token is dispatched by exactly one rank: rank j of its
// attention-TP group (whose ranks hold the same tokens) dispatches rows
// [T j / tp, T (j + 1) / tp). A (token, slot) pair routed to expert e goes to
// every moe-TP rank of the EP rank holding e, in the dispatcher's moe-DP copy.
// The rows go gathered by destination (the backend's row ops, where h lies), their
// experts' ids beside them; received ones are grouped by expert (ascending; within an
// expert in arrival order: source rank, then row), run, and sent back in the order
// received. The dispatcher sums each pair's moe-TP partials in moe-TP rank
// order and combines out[t] += w_tk y_tk over slots k in order; an all-reduce over
// the attention-TP group (zeros in the rows a rank did not dispatch) gives every
// TP rank the layer's output. All orders are fixed: the result is bit-identical
// run to run.
#include <algorithm>
#include <stdexcept>
#include <utility>

#include "executor/forward.h"
#include "executor/forward_detail.h"
#include "executor/registry.h"

namespace dayzero::executor {

using model::OpKind;
using namespace detail;

namespace {
std::vector<int64_t> exchange_counts(Communicator& comm, const std::vector<int64_t>& send_counts) {
  const auto n = static_cast<size_t>(comm.size());
  std::vector<float> send(n), recv(n);
  for (size_t r = 0; r < n; ++r) send[r] = static_cast<float>(send_counts[r]);  // exact below 2^24 rows
  const std::vector<int64_t> ones(n, 1);
  comm.all_to_all_v(send, ones, recv, ones);
  std::vector<int64_t> out(n);
  for (size_t r = 0; r < n; ++r) out[r] = static_cast<int64_t>(recv[r]);
  return out;
}
}  // namespace

Tensor Forward::expert(const model::Layer& L, const Tensor& xe, int64_t e) {
  std::vector<const model::Op*> ops;
  for (const auto& o : L.ops)
    if (o.kind == OpKind::expert_gemm) ops.push_back(&o);
  const model::Op& act = op(L, "experts.act");
  if (ops.size() == 2) {  // fused gate_up: gpt-oss interleaved, Qwen3.5 [gate | up]
    Tensor gate, up;
    const Tensor gu = gemm(*ops[0], xe, e);
    if (m_.config.family == model::Family::gpt_oss) {
      deinterleave_gate_up(gu, gate, up, be_.columns);
    } else {
      const int64_t I = gu.cols() / 2;
      gate = be_.columns(gu, 0, I);
      up = be_.columns(gu, I, I);
    }
    return gemm(*ops[1], activation(act, gate, up), e);
  }
  const Tensor g = gemm(*ops.at(0), xe, e), u = gemm(*ops.at(1), xe, e);
  return gemm(*ops.at(2), activation(act, g, u), e);
}

// The counting sort both MoE paths share: item i (a received row, or a (token, slot)
// pair whose token is i / rows_per_x) goes to its expert's run, stably; the runs through
// their experts in index order (Backend::rows of the gathered rows), the outputs put
// back in item order (Backend::gather_rows), all where x lies.
Tensor Forward::through_experts(const model::Layer& L, const Tensor& x, std::span<const int64_t> of, int64_t lo,
                                int64_t hi, int64_t rows_per_x, const char* what) {
  const auto n = static_cast<int64_t>(of.size());
  if (n == 0) return Tensor({0, x.cols()});
  std::vector<int64_t> start(static_cast<size_t>(hi - lo) + 1, 0);
  for (const int64_t e : of) {
    if (e < lo || e >= hi)
      throw std::logic_error(std::string(what) + ": expert " + std::to_string(e) + " outside [" + std::to_string(lo) +
                             ", " + std::to_string(hi) + ")");
    ++start[static_cast<size_t>(e - lo) + 1];
  }
  for (size_t e = 0; e + 1 < start.size(); ++e) start[e + 1] += start[e];
  std::vector<int64_t> next(start.begin(), start.end() - 1), source(static_cast<size_t>(n)),
      place(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = next[static_cast<size_t>(of[static_cast<size_t>(i)] - lo)]++;
    source[static_cast<size_t>(at)] = i / rows_per_x;
    place[static_cast<size_t>(i)] = at;
  }
  const Tensor sorted = be_.gather_rows(x, source);
  std::vector<Tensor> outs;  // experts in index order
  for (int64_t e = lo; e < hi; ++e) {
    const int64_t first = start[static_cast<size_t>(e - lo)], count = start[static_cast<size_t>(e - lo) + 1] - first;
    if (count > 0) outs.push_back(expert(L, be_.rows(sorted, first, count), e));
  }
  return be_.gather_rows(stacked(outs), place);
}

// The received rows through this rank's experts: the outputs [rows, hidden] in the order
// received (moe-TP partial sums).
Tensor Forward::experts(const model::Layer& L, const Dispatch& d) {
  const auto [lo, hi] = par_.expert_range(m_.config.moe.num_experts);
  return through_experts(L, d.received, d.recv_experts, lo, hi, 1, "a row dispatched to this rank");
}

Tensor Forward::moe(const model::Layer& L, const Tensor& h) {
  const Routing r = routing(L, h);
  Tensor out;
  if (par_.stage_size == 1) {
    out = moe_local(L, h, r);
  } else {
    const Dispatch d = dispatch(h, r);
    const Tensor y = experts(L, d);
    out = combine(L, h, r, d, y);
  }
  if (par_.tp_size > 1) par_.tp_comm->all_reduce_sum(out.data);  // every TP rank gets every row
  if (m_.config.moe.num_shared_experts == 0) return out;
  Tensor shared = mlp(L, h, "shared_experts.");
  if (m_.config.moe.shared_expert_gate) {  // Qwen3.5: sigmoid(x w) [T, 1] scales each row
    // The backend's sigmoid gate with one gate per row, where the values lie. Not an op
    // of the model's inventory (the simulator leaves its [T, H] pass out), so untimed.
    const Tensor g = gemm(op(L, "shared_expert_gate"), h);
    shared = be_.fn<ActivationFn>(OpKind::activation, "sigmoid_gate")(g, shared, ActivationParams{});
  }
  be_.add(out, shared);
  return out;
}

Routing Forward::routing(const model::Layer& L, const Tensor& h) {
  const auto& c = m_.config;
  const model::Op& r_op = op(L, "router");
  RouterParams rp;
  rp.top_k = c.moe.experts_per_token;
  rp.normalize = c.moe.norm_topk_prob;
  rp.n_group = c.moe.n_group;
  rp.topk_group = c.moe.topk_group;
  rp.routed_scaling_factor = c.moe.routed_scaling_factor;
  std::span<const float> bias;
  for (size_t i = 1; i < r_op.weights.size(); ++i) {
    if (r_op.weights[i].ends_with("e_score_correction_bias")) rp.correction_bias = w_.floats(r_op.weights[i]);
    else bias = w_.floats(r_op.weights[i]);
  }
  const StoredWeight& gate = w_.get(r_op.weights.at(0));
  const GemmFn logits_fn = be_.fn<GemmFn>(OpKind::gemm, storage_variant({gate.kind, gate.dtype}));
  const std::string variant = router_variant(c);
  const KernelEntry& rk = be_.kernel(OpKind::router, variant);
  const RouterFn route = std::get<RouterFn>(rk.fn);
  return timer_.run(OpKey{&r_op, variant, {h.rows(), h.cols()}, rk.cost(r_op, {h.rows()})},
                    [&] { return route(logits_fn(h, gate, 0, bias), rp); });
}

Forward::Dispatch Forward::dispatch(const Tensor& h, const Routing& r) {
  const int64_t T = h.rows(), H = h.cols(), K = r.top_k;
  Dispatch d;
  d.own_lo = T * par_.tp_rank / par_.tp_size;
  d.own_hi = T * (par_.tp_rank + 1) / par_.tp_size;
  const int S = par_.stage_size, mtp = par_.moe_tp_size;
  const int64_t per_ep = m_.config.moe.num_experts / par_.ep_size;
  const int base = par_.moe_dp_rank * mtp * par_.ep_size;
  std::vector<std::vector<int64_t>> tokens(static_cast<size_t>(S)), experts(static_cast<size_t>(S));
  d.back.resize(static_cast<size_t>((d.own_hi - d.own_lo) * K * mtp));
  for (int64_t t = d.own_lo; t < d.own_hi; ++t)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t e = r.experts[static_cast<size_t>(t * K + k)];
      for (int j = 0; j < mtp; ++j) {
        const int dest = base + static_cast<int>(e / per_ep) * mtp + j;
        auto& to = tokens[static_cast<size_t>(dest)];
        d.back[static_cast<size_t>(((t - d.own_lo) * K + k) * mtp + j)] = {dest, static_cast<int64_t>(to.size())};
        to.push_back(t);
        experts[static_cast<size_t>(dest)].push_back(e);
      }
    }
  // The rows by destination, gathered where h lies; the experts' ids beside them.
  std::vector<int64_t> order;
  std::vector<float> ids;  // expert ids are exact in float32 (< 2^24)
  d.send_rows.resize(static_cast<size_t>(S));
  for (int dest = 0; dest < S; ++dest) {
    const auto& to = tokens[static_cast<size_t>(dest)];
    d.send_rows[static_cast<size_t>(dest)] = static_cast<int64_t>(to.size());
    order.insert(order.end(), to.begin(), to.end());
    for (int64_t e : experts[static_cast<size_t>(dest)]) ids.push_back(static_cast<float>(e));
  }
  const Tensor packed = order.empty() ? Tensor({0, H}) : be_.gather_rows(h, order);
  Communicator& comm = *par_.stage_comm;
  d.recv_rows = exchange_counts(comm, d.send_rows);
  int64_t recv_total = 0;
  for (int64_t n : d.recv_rows) recv_total += n;
  std::vector<float> recv_ids(static_cast<size_t>(recv_total));
  comm.all_to_all_v(ids, d.send_rows, recv_ids, d.recv_rows);
  d.recv_experts.assign(recv_ids.begin(), recv_ids.end());
  std::vector<int64_t> send_floats(d.send_rows), recv_floats(d.recv_rows);
  for (auto& c : send_floats) c *= H;
  for (auto& c : recv_floats) c *= H;
  d.received = Tensor({recv_total, H});
  comm.all_to_all_v(std::as_const(packed).data, send_floats, d.received.data, recv_floats);
  return d;
}

Tensor Forward::combine(const model::Layer& L, const Tensor& h, const Routing& r, const Dispatch& d, const Tensor& y) {
  // The outputs back to their dispatchers (the dispatch's counts, rows of H).
  const int64_t H = h.cols(), K = r.top_k;
  const int S = par_.stage_size, mtp = par_.moe_tp_size;
  std::vector<int64_t> ret_send(static_cast<size_t>(S)), ret_recv(static_cast<size_t>(S)),
      ret_row(static_cast<size_t>(S) + 1, 0);
  for (size_t s = 0; s < static_cast<size_t>(S); ++s) {
    ret_send[s] = d.recv_rows[s] * H;
    ret_recv[s] = d.send_rows[s] * H;
    ret_row[s + 1] = ret_row[s] + d.send_rows[s];
  }
  Tensor returned({ret_row.back(), H});
  par_.stage_comm->all_to_all_v(std::as_const(y).data, ret_send, returned.data, ret_recv);

  // Each pair's partials summed in moe-TP order (gathered where the rows lie, then
  // added), then out[t] += w y over slots in order (the moe_combine kernel).
  const int64_t own_lo = d.own_lo, own_hi = d.own_hi, pairs = (own_hi - own_lo) * K;
  Tensor ypairs;
  for (int j = 0; j < mtp; ++j) {
    std::vector<int64_t> at(static_cast<size_t>(pairs));
    for (int64_t p = 0; p < pairs; ++p) {
      const auto [rank, row] = d.back[static_cast<size_t>(p * mtp + j)];
      at[static_cast<size_t>(p)] = ret_row[static_cast<size_t>(rank)] + row;
    }
    Tensor part = pairs == 0 ? Tensor({0, H}) : be_.gather_rows(returned, at);
    if (j == 0) ypairs = std::move(part);
    else be_.add(ypairs, part);
  }
  std::vector<int64_t> rows(static_cast<size_t>(pairs));
  std::vector<float> weights(static_cast<size_t>(pairs));
  for (int64_t p = 0; p < pairs; ++p) {
    rows[static_cast<size_t>(p)] = own_lo + p / K;
    weights[static_cast<size_t>(p)] = r.weights[static_cast<size_t>(own_lo * K + p)];
  }
  return weighted_sum(L, h, ypairs, rows, weights, own_lo, own_hi);
}

Tensor Forward::weighted_sum(const model::Layer& L, const Tensor& h, const Tensor& ypairs,
                             const std::vector<int64_t>& rows, const std::vector<float>& weights, int64_t own_lo,
                             int64_t own_hi) {
  const model::Op& comb = op(L, "moe_combine");
  const CombineFn combine_fn = be_.fn<CombineFn>(OpKind::moe_combine, "weighted_sum");
  Tensor out = be_.zeros(h.shape);
  timer_.run_inplace(OpKey{&comb, "weighted_sum", {own_hi - own_lo, h.cols()}, op_cost(comb, {own_hi - own_lo})}, out,
                     [&](Tensor& o) { combine_fn(o, ypairs, rows, weights); });
  return out;
}

// The pairs (t, k) through their experts in expert order, within an expert in pair
// order, which is the order `experts` receives them in from a one-rank dispatch.
Tensor Forward::moe_local(const model::Layer& L, const Tensor& h, const Routing& r) {
  const int64_t T = h.rows(), K = r.top_k, pairs = T * K;
  if (pairs == 0) return Tensor(h.shape);
  const Tensor y = through_experts(L, h, std::span<const int64_t>(r.experts.data(), static_cast<size_t>(pairs)), 0,
                                   m_.config.moe.num_experts, K, "the router's choice");
  std::vector<int64_t> rows(static_cast<size_t>(pairs));
  for (int64_t p = 0; p < pairs; ++p) rows[static_cast<size_t>(p)] = p / K;
  const std::vector<float> weights(r.weights.begin(), r.weights.begin() + pairs);
  return weighted_sum(L, h, y, rows, weights, 0, T);
}

}  // namespace dayzero::executor
