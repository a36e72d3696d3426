"""Models: the local model registry, GPU offload, a test prompt and Hub downloads."""
import streamlit as st

from studio.views.answer_chance import CHANCE_MARGIN, chance_caveat, ranked_probabilities
from studio.widgets import ProjectError
from studio.model_lab import (
    EXAMPLE_CASE,
    MAX_CASE_CHARS,
    TEST_LABELS,
    TEST_N_CTX,
    hub_offline,
    model_facts,
    registry_table,
)
from studio.model_lab import (ask_test_prompt, example_flag, fetch_hub_model, gpu_layers_setting, input_note,
                              installed_keys, measured_note)
from studio.training_panel import training_section
from studio.widgets import disclaimer
from studio.literal import literal
from studio.views import session_keys as keys

st.title("Models")
disclaimer()
st.write("The language models the diagnostic agents can run on, in process through llama.cpp. "
         "Nothing is downloaded unless you ask for a Hugging Face Hub file below.")

st.subheader("Registry")
st.dataframe(registry_table(), hide_index=True, key="models_registry")
facts = st.session_state.setdefault(keys.MODELS_FACTS, {})
for key in installed_keys():
    with st.expander(f"File metadata: {key}"):
        st.caption("Reads the GGUF header and the file's sha256 (about a second the first time; "
                   "Gemma is assembled into the model cache on first use). No weights are loaded.")
        if st.button("Read metadata", key=f"models_meta_{key}"):
            try:
                with st.spinner(f"Reading {key} ..."):
                    facts[key] = model_facts(key)
            except ProjectError as exc:
                st.error(f"No metadata for {literal(key)}: {literal(exc)}")
        if key in facts:
            st.dataframe({"field": list(facts[key]), "value": list(facts[key].values())}, hide_index=True)

st.subheader("GPU offload")
n_gpu_layers = gpu_layers_setting()

st.subheader("Test prompt")
st.write(f"A single agent in scored mode reads the case and gives a probability for each of the "
         f"{len(TEST_LABELS)} DDXPlus labels (one forward pass, context {TEST_N_CTX} tokens). A loaded "
         "model is kept in memory for the next prompt.")
c1, c2 = st.columns(2)
picked = c1.selectbox("Model", installed_keys(), key="models_test_model")
typed = c2.text_input("Or a model key", key="models_test_key",
                      placeholder="file:/path/model.gguf or hf:owner/repo:file.gguf",
                      help="A file: key must name a GGUF file inside the models folder "
                           "($DCEM_MODELS_DIR, default models/ in the project) or the registry's own folders.")
text = st.text_area("Case text", EXAMPLE_CASE, height=140, key="models_test_text",
                    help=f"At most {MAX_CASE_CHARS:,} characters.")
if st.button("Run the test prompt", type="primary", key="models_test_run"):
    key = typed.strip() or picked or ""
    try:
        with st.spinner(f"Loading {key} and asking it ..."):
            st.session_state[keys.MODELS_TEST_RESULT] = ask_test_prompt(key, n_gpu_layers, text)
    except ProjectError as exc:
        st.session_state.pop(keys.MODELS_TEST_RESULT, None)
        st.error(f"Test prompt failed: {literal(exc)}")
result = st.session_state.get(keys.MODELS_TEST_RESULT)
if result is not None:
    st.caption(f"{result.key}, n_gpu_layers {result.n_gpu_layers}")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Most probable", result.label)
    m2.metric("Load time", f"{result.load_s:.2f} s", "already loaded" if result.cached else None,
              delta_color="off")
    m3.metric("Answer time", f"{result.answer_s:.2f} s")
    m4.metric("Prompt tokens", result.prompt_tokens)
    try:
        caveat = chance_caveat(result.table["probability"])
    except ProjectError as exc:
        caveat = f"The answer cannot be compared with chance: {literal(exc)}"
    if caveat:
        st.warning(caveat)
    if (wrong := example_flag(text, result.label, result.key)) is not None:
        st.warning(wrong)
    if (mismatch := input_note(result.key, text)) is not None:
        st.warning(mismatch)
    st.info(measured_note(result.key))
    st.caption(f"Most probable label first. An answer whose top probability lies within {CHANCE_MARGIN} of "
               "chance (1 / number of labels) is flagged as near chance.")
    st.dataframe(ranked_probabilities(result.table), hide_index=True, key="models_test_table",
                 column_config={"probability": st.column_config.ProgressColumn(
                     "probability", min_value=0.0, max_value=1.0, format="%.3f")})

training_section()

st.subheader("Hugging Face Hub")
st.write("Fetch a GGUF file as `hf:owner/repo:file.gguf`: the local Hub cache is used first, the Hub "
         "only when the file is not there. The model's own licence applies (see its model card).")
if hub_offline():
    st.caption("HF_HUB_OFFLINE is set: only files already in the local Hub cache can be used.")
h1, h2 = st.columns(2)
repo = h1.text_input("Repository", key="models_hf_repo", placeholder="owner/repo")
filename = h2.text_input("File name", key="models_hf_file", placeholder="model.Q4_K_M.gguf")
if st.button("Get the file", key="models_hf_get"):
    try:
        with st.spinner("Looking in the local Hub cache, then on the Hub ..."):
            hf_key, hf_path = fetch_hub_model(repo, filename)
    except ProjectError as exc:
        st.error(f"Not available: {literal(exc)}")
    else:  # rerun so that the lists above offer the new key
        st.session_state[keys.MODELS_HF_DONE] = f"{hf_key} is at {hf_path}; it is now offered in the lists above."
        st.rerun()
if done := st.session_state.pop(keys.MODELS_HF_DONE, None):
    st.success(done)
