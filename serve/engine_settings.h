#pragma once
// A user's overrides of an engine profile's settings (plan/engine_settings.h: from a
// scenario's "engine" object, an engine settings file or `serve`'s flags) applied
// over the engine's defaults (serve/engine.h names where each comes from). A setting
// left unset keeps the engine's default.

#include <functional>

#include "model/model.h"
#include "plan/engine_settings.h"
#include "serve/engine.h"
#include "serve/engine_overheads.h"
#include "topology/device.h"

namespace dayzero::serve {

using plan::EngineSettings;

// The profile with the set fields replaced (the engine itself is the caller's choice:
// default_profile). The largest step the engine profiles its activations with follows
// the token budget, and the logits it samples at most the running sequences, as the
// engines size them.
EngineProfile apply(EngineProfile p, const EngineSettings& s);

// The profile a plan is served with: the engine's defaults for the plan's deployment on
// `dev` (default_profile, deployment_of), the calibrated host overheads, then the
// settings (a scenario's, a file's, flags').
EngineProfile profile_for(Engine e, const plan::Plan& p, const model::Model& m, const topology::DeviceSpec& dev,
                          const EngineOverheadTable& overheads, const EngineSettings& settings);

// The memory rule of the engine `settings` name (vLLM when none) for each plan of `m`
// on `dev`: profile_for's `memory`, for search::SearchOptions::engine_memory. Holds a
// reference to `m`, which must outlive it.
std::function<simulate::KvMemoryRule(const plan::Plan&)> engine_memory_rules(const EngineSettings& settings,
                                                                             const model::Model& m,
                                                                             const topology::DeviceSpec& dev);

// The kernels of the steps of the engine `settings` name (vLLM when none), for
// search::SearchOptions::kernels: engine_kernels of its defaults with the settings.
simulate::EngineKernels engine_kernels(const EngineSettings& settings);

}  // namespace dayzero::serve
