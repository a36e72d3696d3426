"""Keyword heuristic mapping a MedQA item to one of the seven MedQA-Tri specialties.

Each specialty has a weighted keyword list (regular expressions, case-insensitive, matched
from a word start): 3 = names a disease or organ of that specialty outright
("cardiomyopathy", "kidney"), 2 = strongly suggestive ("cardiac", "urinary"),
1 = weak, symptom-level ("chest pain", "cough").  A competing out-of-scope list
(``OUT_OF_SCOPE``: psychiatry, dermatology, haematology/oncology, obstetrics/gynaecology,
musculoskeletal/rheumatology, genetics/immunology, toxicology, eye/ENT) soaks up items
that belong to none of the seven; if it wins, the item is skipped.

Scoring for each specialty: ``ANSWER_FACTOR`` x (sum of the weights of the distinct
keywords found in the canonical answer) + ``STEM_FACTOR`` x (the same over the
stem).  The answer is the item's diagnosis, so it counts three times as much as the
vignette.  The top specialty is returned only if it scores at least ``min_score``, beats
every other list (the out-of-scope one included) by at least ``min_margin``; otherwise
the item is skipped (``None``).  The reason string lists the matched keywords.
"""
from __future__ import annotations

import re
from typing import Mapping, NamedTuple

__all__ = [
    "ANSWER_FACTOR",
    "KEYWORDS",
    "Keyword",
    "MEDQA_TRI_LABELS",
    "MIN_MARGIN",
    "MIN_SCORE",
    "OUT_OF_SCOPE",
    "STEM_FACTOR",
    "map_specialty",
    "specialty_scores",
]

MEDQA_TRI_LABELS: tuple[str, ...] = (
    "Cardiology",
    "Pulmonology",
    "Neurology",
    "Gastroenterology",
    "Endocrinology",
    "Infectious_Disease",
    "Renal_Urology",
)
OUT_OF_SCOPE = "Out_of_scope"
ANSWER_FACTOR = 3.0
STEM_FACTOR = 1.0
MIN_SCORE = 6.0
MIN_MARGIN = 1.0

_RAW: dict[str, dict[int, str]] = {
    "Cardiology": {
        3: r"myocardi\w*|cardiomyopath\w*|angina|coronary|heart failure|atrial (fibrillation|flutter)"
        r"|arrhythmi\w*|tamponade|pericardi\w*|aortic (valve|stenosis|regurgitation|dissection"
        r"|aneurysm|rupture)|mitral|tricuspid|tetralogy|transposition of (the )?great"
        r"|coarctation|septal defect|ductus arteriosus|endocardial cushion|myxoma|takotsubo"
        r"|qt interval|long qt|torsade\w*|atheroscl\w*|cardiac|heart(?! rate| sounds?)",
        2: r"syncope|aorta|aortic|aortoiliac|femoropopliteal|iliac|popliteal|cholesterol emboli\w*"
        r"|ventricular|ventricle|atrial|murmur|troponin|valv(e|ular)|aneurysm|claudication"
        r"|vasovagal",
        1: r"hypertension|chest pain|palpitation\w*|electrocardiogra\w*|ecg|echocardiogra\w*|jugular venous",
    },
    "Pulmonology": {
        3: r"pulmonary|lungs?|pneumonias?|pneumonitis|asthma\w*|copd|emphysema|bronch\w*|pleura\w*"
        r"|pneumothorax|atelectasis|sarcoidosis|silicosis|asbestosis|pneumoconiosis"
        r"|mesothelioma|alveol\w*|hypoventilation|dead space|cystic fibrosis|sleep apnea"
        r"|respiratory (distress|failure)|interstitial lung|tracheobronch\w*",
        2: r"respiratory(?! rate)|airways?|trache\w*|spirometry|hypoxemi\w*|pulmonary embol\w*",
        1: r"dyspnea|shortness of breath|cough\w*|hemoptysis|wheez\w*|crackles",
    },
    "Neurology": {
        3: r"neurolog\w*|neuropath\w*|cerebr\w*|cerebell\w*|stroke|seizure\w*|epilep\w*|dementia"
        r"|alzheimer\w*|parkinson\w*|huntington\w*|multiple sclerosis|demyelinat\w*"
        r"|myasthenia|lambert-eaton|guillain|meningi\w*|encephal\w*|hydrocephalus"
        r"|subarachnoid|subdural|epidural hematoma|intracranial|herniation of the uncus"
        r"|uncal|syringomyelia|anterior horn|motor neuron|amyotrophic|fasciculus"
        r"|(frontal|temporal|parietal|occipital) lobe|meningeal|aphasia|palsy"
        r"|interventricular foramen|area postrema|csf|brain",
        2: r"spinal|nerves?|ataxia|migraine|headache|neuron\w*|myelin\w*|acetylcholine receptor",
        1: r"weakness|numbness|confusion|tremor|gait",
    },
    "Gastroenterology": {
        3: r"gastr\w*|esophag\w*|duoden\w*|jejun\w*|ileum|ileal|colon|colonic|colonoscopy|colitis|colorectal"
        r"|crohn\w*|celiac|bowel|intestin\w*|hepat\w*|liver|cirrho\w*|biliar\w*|bile|cholecyst\w*"
        r"|choledoch\w*|cholang\w*|gallbladder|gallstone\w*|pancrea\w*|diverticul\w*"
        r"|appendic\w*|peptic|pylor\w*|mesenteric|hirschsprung|volvulus|intussusception"
        r"|plummer-vinson|udp-glucuronosyltransferase|wilson disease|hemochromatosis"
        r"|polyps?|vipoma|pylori",
        2: r"jaundice|dysphagia|rectal|rectum|melena|hematochezia",
        1: r"diarrhea|abdominal pain|vomiting|bilirubin",
    },
    "Endocrinology": {
        3: r"thyro\w*|parathyro\w*|hyperparathyro\w*|hypoparathyro\w*|tsh|adrenal\w*"
        r"|adrenocortical|cushing\w*|addison\w*|aldosteron\w*|pituitar\w*|prolactin\w*"
        r"|acromegaly|diabet\w*|insulin\w*|hypoglycemi\w*|hyperglycemi\w*|pheochromocytoma"
        r"|multiple endocrine neoplasia|men ?[12]\w*|myxedema|graves|goiter|iodine",
        2: r"hormone|antidiuretic|adh|gnrh|gonadotropin|androgen\w*|hypercalcemi\w*"
        r"|hypocalcemi\w*|cortisol|endocrin\w*",
        1: r"glucose|calcium|weight gain",
    },
    "Infectious_Disease": {
        3: r"staphylococc\w*|streptococc\w*|enterococc\w*|pseudomonas|escherichia|e\. coli"
        r"|salmonella|shigella|clostridi\w*|bacteroides|haemophilus|chlamydia|gonorrh\w*"
        r"|neisseria|treponema|syphilis|borrelia|lyme|listeria|legionella|mycoplasma"
        r"|mycobacter\w*|tubercul\w*|histoplasm\w*|coccidioid\w*|valley fever|blastomyc\w*"
        r"|aspergill\w*|candid\w*|cryptococc\w*|plasmodium|malaria|babesi\w*|toxoplasm\w*"
        r"|trichomon\w*|giardia|entamoeba|parasit\w*|ixodes|ticks?|rickettsi\w*|hiv|aids"
        r"|herpes|hsv\S*|varicella|chickenpox|zoster|measles|mumps|rubella|influenza"
        r"|hemagglutinin|epstein|ebv|cytomegalo\w*|cmv|zika|chikungunya|dengue|rabies"
        r"|plague|yersinia|anthrax|bacillus|tetan\w*|botulism|prion\w*|gram-(positive|negative)"
        r"|cocci|bacilli|sepsis|septic|endocarditis|ducreyi|food-borne",
        2: r"bacteri\w*|vir(us|al|uses)|fung\w*|infecti\w*|abscess\w*|vaccin\w*|capsule"
        r"|exotoxin|toxin|virulence|culture|organisms?|pathogens?",
        1: r"fever|chills",
    },
    "Renal_Urology": {
        3: r"renal|kidneys?|nephr\w*|glomerul\w*|juxtaglomerular|tubular|tubules?|tubulointerstitial|tubulitis|collecting duct\w*"
        r"|bladder|urethr\w*|ureter\w*|prostat\w*|alport|minimal change|papillary necrosis"
        r"|bartter\w*|gitelman\w*|liddle|dialysis|testic\w*|scrot\w*|tunica vaginal\w*"
        r"|hydrocele|varicocele|cystocele|urolith\w*|hydronephrosis",
        2: r"urinary|hematuria|proteinuria|uremic|incontinence|leydig|sertoli|diures\w*"
        r"|cotransporter|urate",
        1: r"urine|creatinine|dysuria|flank pain",
    },
    OUT_OF_SCOPE: {
        3: r"personality disorder|schizo\w*|bipolar|depressi\w*|anxiety|psychotic|psychosis"
        r"|somatization|factitious|conversion disorder|post-?traumatic stress|ptsd|cyclothymi\w*"
        r"|obsessive|panic|substance|intoxication|overdose|delirium|sleep phase"
        r"|dermat\w*|keratos\w*|melanoma|psoria\w*|vitiligo|pemphig\w*|eczema|ichthyosis"
        r"|lichen|keratoacanthoma|tinea|molluscum|scalded skin"
        r"|anemia|leukemia|lymphoma|myeloma|thrombocytopeni\w*|thrombasthenia|von willebrand"
        r"|hemophilia|sickle cell|thalassemia|macroglobulinemia|antithrombin"
        r"|protein [cs] deficiency|transfusion|iron deficiency|b12|disseminated intravascular"
        r"|ovar\w*|uter(us|ine|i)|vagina|vaginal|cervix|endometri\w*|placent\w*|amniotic|fetus"
        r"|fetal|menstrua\w*|menopaus\w*|breast\w*|lactation|fibroadenoma|phyllodes"
        r"|m[uü]e?llerian|paramesonephric|pseudocyesis|anovulation|rectouterine|antepartum"
        r"|arthritis|arthr\w*|bursitis|capsulitis|rotator cuff|tendin\w*|osteo\w*|fracture"
        r"|gout|pyrophosphate|lupus|polymyositis|dermatomyositis|scleroderma|connective tissue"
        r"|ehlers-danlos|marfan|temporomandibular|ewing|fibrous dysplasia|osteitis"
        r"|heat stroke|poison\w*|spider|snake|shellfish|heroin|opioid\w*|benzodiazepine\w*"
        r"|cathinone|retina\w*|ocular|lens|glaucoma|cataract|otitis"
        r"|salivary|laryn\w*|septal hematoma|neuroleptic",
        2: r"carcinoma|cancer|tumou?r|neoplas\w*|metasta\w*|sarcoma|malignan\w*|autosomal"
        r"|x-linked|mosaicism|chromosom\w*|genes?|mutation|deletion|immunodeficiency"
        r"|complement|t[- ]cells?|b[- ]cells?|cytokine|interferon|interleukin|ifn\S*"
        r"|hemoly\w*|coagul\w*|psychiatr\w*|hallucinat\w*|pregnan\w*",
        1: r"skin|bone|eyes?|conjunctiv\w*|platelet\w*|rash",
    },
}



def _alternatives(pattern: str) -> list[str]:
    """Split ``pattern`` at its top-level ``|`` (not inside parentheses)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(pattern):
        depth += (ch == "(") - (ch == ")")
        if ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    parts.append(pattern[start:])
    return parts


class Keyword(NamedTuple):
    """One compiled keyword: ``pattern`` (whole-word), its ``weight``, and the literal
    lower-case ``prefix`` every match starts with (a cheap substring pre-check)."""

    pattern: re.Pattern[str]
    weight: float
    prefix: str


def _literal_prefix(alt: str) -> str:
    prefix = []
    for ch in alt:
        if ch in "\\()[]?*+|{}.^$":
            break
        prefix.append(ch)
    if prefix and alt[len(prefix):len(prefix) + 1] in ("?", "*", "{"):
        prefix.pop()  # the last literal is optional
    return "".join(prefix).lower()


KEYWORDS: Mapping[str, tuple[Keyword, ...]] = {
    label: tuple(
        Keyword(re.compile(rf"(?<!\w)(?:{alt})(?!\w)", re.IGNORECASE), float(weight),
                _literal_prefix(alt))
        for weight, pattern in tiers.items()
        for alt in _alternatives(pattern)
    )
    for label, tiers in _RAW.items()
}


def _hits(text: str, label: str) -> list[tuple[str, float]]:
    """Distinct keywords of ``label`` found in ``text`` with their weights."""
    lower = text.lower()
    found: dict[str, float] = {}
    for keyword in KEYWORDS[label]:
        if keyword.prefix and keyword.prefix not in lower:
            continue
        match = keyword.pattern.search(text)
        if match:
            word = match.group(0).lower()
            found[word] = max(found.get(word, 0.0), keyword.weight)
    return sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))


def specialty_scores(stem: str, answer: str) -> dict[str, tuple[float, str]]:
    """Score and matched-keyword description for every list (the 7 labels and
    ``OUT_OF_SCOPE``)."""
    result: dict[str, tuple[float, str]] = {}
    for label in KEYWORDS:
        a_hits, s_hits = _hits(answer, label), _hits(stem, label)
        score = ANSWER_FACTOR * sum(w for _, w in a_hits) + STEM_FACTOR * sum(w for _, w in s_hits)
        parts = []
        if a_hits:
            parts.append("answer[" + ", ".join(f"{k}:{w:g}" for k, w in a_hits) + "]")
        if s_hits:
            parts.append("stem[" + ", ".join(f"{k}:{w:g}" for k, w in s_hits) + "]")
        result[label] = (score, " ".join(parts))
    return result


def map_specialty(
    stem: str,
    answer: str,
    *,
    min_score: float = MIN_SCORE,
    min_margin: float = MIN_MARGIN,
) -> tuple[str | None, str]:
    """Map an item to a MedQA-Tri label by the weighted keyword heuristic.

    Returns ``(label, reason)``; ``label`` is ``None`` when the item is skipped (no
    list reaches ``min_score``, the lead over the runner-up is below ``min_margin``,
    or the out-of-scope list wins).  ``reason`` names the matched keywords.
    """
    scores = specialty_scores(stem, answer)
    ranked = sorted(scores.items(), key=lambda kv: -kv[1][0])
    (top, (top_score, top_why)), (second, (second_score, _)) = ranked[0], ranked[1]
    summary = f"{top} {top_score:g} vs {second} {second_score:g}"
    if top_score < min_score:
        return None, f"skipped: low score ({summary}) {top_why}".strip()
    if top_score - second_score < min_margin:
        return None, f"skipped: tie/low margin ({summary}) {top_why}".strip()
    if top == OUT_OF_SCOPE:
        return None, f"skipped: out of scope ({summary}) {top_why}".strip()
    return top, f"keyword: {top_why} ({summary})"
