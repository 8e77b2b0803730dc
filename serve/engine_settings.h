#pragma once
// A user's overrides of an engine profile's settings (plan/engine_settings.h: from a
// scenario's "engine" object, an engine settings file or `serve`'s flags) applied
// over the engine's defaults (serve/engine.h names where each comes from). A setting
// left unset keeps the engine's default.

#include "plan/engine_settings.h"
#include "serve/engine.h"

namespace dayzero::serve {

using plan::EngineSettings;

// The profile with the set fields replaced (the engine itself is the caller's choice:
// default_profile). The largest step the engine profiles its activations with follows
// the token budget, and the logits it samples at most the running sequences, as the
// engines size them.
EngineProfile apply(EngineProfile p, const EngineSettings& s);

}  // namespace dayzero::serve
