"""Glossary: every concept, metric and parameter the dashboard shows, in words."""
import streamlit as st

from studio.first_visit import show_terms
from studio.views.glossary import GLOSSARY_GROUPS
from studio.widgets import disclaimer

st.title("Glossary")
disclaimer()
st.write("What the pages' energies, metrics and settings mean. Table headers show the words; the "
         "name in code type is how the command line, the settings and the exports spell it. "
         "Hover a table header on any page to see its meaning there.")
for group, terms in GLOSSARY_GROUPS:
    st.subheader(group)
    show_terms(terms)
