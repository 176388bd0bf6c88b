"""Hand-written vocabularies of the synthetic quarter: drugs, their textbook indications, reactions.

Every row is a textbook fact (a brand, its active ingredient as FAERS writes ``prod_ai``, its usual
route and dose, and the indications in its label) or a common MedDRA preferred term. Nothing here
is copied from FAERS data. Popularity weights and demographic profiles are rough guesses that give
a realistic shape, not estimates.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Drug", "DRUGS", "PROFILES", "REACTIONS", "COUNTRIES", "COMPANIES", "UNKNOWN_INDICATION"]

UNKNOWN_INDICATION = "Product used for unknown indication"


class Drug(NamedTuple):
    """One product: brand (``drugname``), ingredient (``prod_ai``) and how it is used.

    ``route`` is a key of ``ROUTES`` in ``_items``; ``dose`` is "amount unit" (may be empty);
    ``indications`` are MedDRA-style PTs separated by ``|``; ``weight`` is a relative popularity;
    ``profile`` is a key of ``PROFILES`` (who takes the drug).
    """

    name: str
    prod_ai: str
    route: str
    dose: str
    freq: str
    indications: str
    weight: float
    profile: str


# Multipliers of a drug's popularity per true demographic stratum, in the order
# (F <18, F 18-59, F >=60, M <18, M 18-59, M >=60).
PROFILES: dict[str, tuple[float, float, float, float, float, float]] = {
    "any": (0.25, 1.0, 1.0, 0.25, 1.0, 1.0),
    "adult": (0.02, 1.0, 1.0, 0.02, 1.0, 1.0),
    "elderly": (0.01, 0.4, 1.6, 0.01, 0.4, 1.6),
    "female": (0.05, 1.0, 1.0, 0.005, 0.05, 0.05),
    "female_elderly": (0.0, 0.4, 1.6, 0.0, 0.02, 0.08),
    "male": (0.005, 0.03, 0.03, 0.05, 1.0, 1.0),
    "male_elderly": (0.0, 0.01, 0.01, 0.0, 0.4, 1.6),
    "child": (4.0, 0.3, 0.2, 4.0, 0.3, 0.2),
    "young": (0.8, 1.0, 0.2, 0.8, 1.0, 0.2),
    "pah": (6.0, 0.8, 0.6, 6.0, 0.8, 0.6),
    "mostly_female": (0.05, 1.0, 0.8, 0.01, 0.12, 0.1),
    "sleep": (0.05, 0.8, 1.5, 0.05, 0.7, 0.8),
}

DRUGS: tuple[Drug, ...] = (
    # The drugs of the paper's Table 5 (Lin et al. 2016) and the planted stratified pair.
    Drug("AVANDIA", "ROSIGLITAZONE MALEATE", "oral", "4 MG", "QD", "Type 2 diabetes mellitus", 14, "adult"),
    Drug("TYSABRI", "NATALIZUMAB", "iv", "300 MG", "QM", "Multiple sclerosis|Crohn's disease", 12, "adult"),
    Drug("ZELNORM", "TEGASEROD MALEATE", "oral", "6 MG", "BID", "Irritable bowel syndrome|Constipation", 14,
         "mostly_female"),
    Drug("WARFARIN", "WARFARIN SODIUM", "oral", "5 MG", "QD",
         "Atrial fibrillation|Deep vein thrombosis|Pulmonary embolism", 16, "elderly"),
    Drug("REVATIO", "SILDENAFIL CITRATE", "oral", "20 MG", "TID", "Pulmonary arterial hypertension", 6,
         "pah"),
    Drug("AMBIEN", "ZOLPIDEM TARTRATE", "oral", "10 MG", "HS", "Insomnia", 22, "sleep"),
    # Diabetes
    Drug("METFORMIN", "METFORMIN HYDROCHLORIDE", "oral", "500 MG", "BID", "Type 2 diabetes mellitus", 30,
         "adult"),
    Drug("ACTOS", "PIOGLITAZONE HYDROCHLORIDE", "oral", "30 MG", "QD", "Type 2 diabetes mellitus", 5,
         "adult"),
    Drug("JANUVIA", "SITAGLIPTIN PHOSPHATE", "oral", "100 MG", "QD", "Type 2 diabetes mellitus", 8, "adult"),
    Drug("LANTUS", "INSULIN GLARGINE", "sc", "20 IU", "QD",
         "Type 1 diabetes mellitus|Type 2 diabetes mellitus", 14, "any"),
    Drug("HUMALOG", "INSULIN LISPRO", "sc", "6 IU", "TID",
         "Type 1 diabetes mellitus|Type 2 diabetes mellitus", 8, "any"),
    Drug("OZEMPIC", "SEMAGLUTIDE", "sc", "0.5 MG", "QW", "Type 2 diabetes mellitus|Weight control", 22,
         "adult"),
    Drug("TRULICITY", "DULAGLUTIDE", "sc", "1.5 MG", "QW", "Type 2 diabetes mellitus", 14, "adult"),
    Drug("JARDIANCE", "EMPAGLIFLOZIN", "oral", "10 MG", "QD", "Type 2 diabetes mellitus|Cardiac failure", 10,
         "adult"),
    Drug("FARXIGA", "DAPAGLIFLOZIN PROPANEDIOL", "oral", "10 MG", "QD", "Type 2 diabetes mellitus", 6,
         "adult"),
    Drug("VICTOZA", "LIRAGLUTIDE", "sc", "1.2 MG", "QD", "Type 2 diabetes mellitus", 6, "adult"),
    Drug("GLIPIZIDE", "GLIPIZIDE", "oral", "5 MG", "QD", "Type 2 diabetes mellitus", 4, "elderly"),
    # Cardiovascular
    Drug("LIPITOR", "ATORVASTATIN CALCIUM", "oral", "20 MG", "QD", "Hypercholesterolaemia|Hyperlipidaemia",
         26,
         "adult"),
    Drug("CRESTOR", "ROSUVASTATIN CALCIUM", "oral", "10 MG", "QD", "Hypercholesterolaemia", 12, "adult"),
    Drug("ZOCOR", "SIMVASTATIN", "oral", "40 MG", "QD", "Hypercholesterolaemia", 8, "elderly"),
    Drug("LISINOPRIL", "LISINOPRIL", "oral", "10 MG", "QD", "Hypertension", 22, "adult"),
    Drug("AMLODIPINE", "AMLODIPINE BESYLATE", "oral", "5 MG", "QD", "Hypertension", 22, "adult"),
    Drug("LOSARTAN POTASSIUM", "LOSARTAN POTASSIUM", "oral", "50 MG", "QD", "Hypertension", 12, "adult"),
    Drug("METOPROLOL SUCCINATE", "METOPROLOL SUCCINATE", "oral", "50 MG", "QD",
         "Hypertension|Atrial fibrillation", 14, "elderly"),
    Drug("CARVEDILOL", "CARVEDILOL", "oral", "12.5 MG", "BID", "Cardiac failure", 5, "elderly"),
    Drug("LASIX", "FUROSEMIDE", "oral", "40 MG", "QD", "Oedema|Cardiac failure congestive", 14, "elderly"),
    Drug("HYDROCHLOROTHIAZIDE", "HYDROCHLOROTHIAZIDE", "oral", "25 MG", "QD", "Hypertension", 10, "adult"),
    Drug("SPIRONOLACTONE", "SPIRONOLACTONE", "oral", "25 MG", "QD", "Cardiac failure|Hypertension", 5,
         "elderly"),
    Drug("ELIQUIS", "APIXABAN", "oral", "5 MG", "BID", "Atrial fibrillation|Deep vein thrombosis", 24,
         "elderly"),
    Drug("XARELTO", "RIVAROXABAN", "oral", "20 MG", "QD", "Atrial fibrillation|Pulmonary embolism", 16,
         "elderly"),
    Drug("PRADAXA", "DABIGATRAN ETEXILATE MESYLATE", "oral", "150 MG", "BID", "Atrial fibrillation", 5,
         "elderly"),
    Drug("PLAVIX", "CLOPIDOGREL BISULFATE", "oral", "75 MG", "QD", "Acute coronary syndrome|Ischaemic stroke",
         10, "elderly"),
    Drug("ASPIRIN", "ASPIRIN", "oral", "81 MG", "QD", "Prophylaxis|Coronary artery disease", 26, "adult"),
    Drug("ENTRESTO", "SACUBITRIL\\VALSARTAN", "oral", "49 MG", "BID", "Cardiac failure chronic", 10,
         "elderly"),
    Drug("DIGOXIN", "DIGOXIN", "oral", "0.125 MG", "QD", "Atrial fibrillation|Cardiac failure", 4, "elderly"),
    Drug("AMIODARONE HYDROCHLORIDE", "AMIODARONE HYDROCHLORIDE", "oral", "200 MG", "QD",
         "Atrial fibrillation", 5, "elderly"),
    Drug("TRACLEER", "BOSENTAN", "oral", "62.5 MG", "BID", "Pulmonary arterial hypertension", 3, "any"),
    Drug("LETAIRIS", "AMBRISENTAN", "oral", "5 MG", "QD", "Pulmonary arterial hypertension", 3, "adult"),
    Drug("NITROGLYCERIN", "NITROGLYCERIN", "sl", "0.4 MG", "PRN", "Angina pectoris", 4, "elderly"),
    # Neurology and psychiatry
    Drug("OCREVUS", "OCRELIZUMAB", "iv", "600 MG", "", "Multiple sclerosis", 10, "adult"),
    Drug("TECFIDERA", "DIMETHYL FUMARATE", "oral", "240 MG", "BID",
         "Relapsing-remitting multiple sclerosis", 6,
         "adult"),
    Drug("GILENYA", "FINGOLIMOD HYDROCHLORIDE", "oral", "0.5 MG", "QD", "Multiple sclerosis", 5, "young"),
    Drug("COPAXONE", "GLATIRAMER ACETATE", "sc", "40 MG", "TIW", "Multiple sclerosis", 6, "adult"),
    Drug("AVONEX", "INTERFERON BETA-1A", "im", "30 UG", "QW", "Multiple sclerosis", 4, "adult"),
    Drug("LYRICA", "PREGABALIN", "oral", "75 MG", "BID", "Neuralgia|Fibromyalgia|Neuropathy peripheral", 16,
         "adult"),
    Drug("NEURONTIN", "GABAPENTIN", "oral", "300 MG", "TID", "Neuralgia|Epilepsy|Pain", 18, "adult"),
    Drug("KEPPRA", "LEVETIRACETAM", "oral", "500 MG", "BID", "Epilepsy|Seizure", 10, "any"),
    Drug("LAMICTAL", "LAMOTRIGINE", "oral", "100 MG", "QD", "Epilepsy|Bipolar disorder", 8, "young"),
    Drug("DEPAKOTE", "DIVALPROEX SODIUM", "oral", "500 MG", "BID", "Epilepsy|Bipolar disorder", 5, "any"),
    Drug("XANAX", "ALPRAZOLAM", "oral", "0.5 MG", "TID", "Anxiety", 12, "adult"),
    Drug("ATIVAN", "LORAZEPAM", "oral", "1 MG", "PRN", "Anxiety|Insomnia", 8, "adult"),
    Drug("CELEXA", "CITALOPRAM HYDROBROMIDE", "oral", "20 MG", "QD", "Depression", 8, "adult"),
    Drug("ZOLOFT", "SERTRALINE HYDROCHLORIDE", "oral", "50 MG", "QD", "Depression|Anxiety", 12, "young"),
    Drug("LEXAPRO", "ESCITALOPRAM OXALATE", "oral", "10 MG", "QD",
         "Depression|Generalised anxiety disorder", 8,
         "adult"),
    Drug("PROZAC", "FLUOXETINE HYDROCHLORIDE", "oral", "20 MG", "QD", "Depression", 6, "young"),
    Drug("CYMBALTA", "DULOXETINE HYDROCHLORIDE", "oral", "60 MG", "QD", "Depression|Fibromyalgia", 10,
         "adult"),
    Drug("EFFEXOR", "VENLAFAXINE HYDROCHLORIDE", "oral", "75 MG", "QD", "Depression", 5, "adult"),
    Drug("WELLBUTRIN", "BUPROPION HYDROCHLORIDE", "oral", "150 MG", "QD", "Depression|Smoking cessation", 6,
         "adult"),
    Drug("SEROQUEL", "QUETIAPINE FUMARATE", "oral", "100 MG", "HS", "Schizophrenia|Bipolar disorder", 10,
         "adult"),
    Drug("ABILIFY", "ARIPIPRAZOLE", "oral", "10 MG", "QD", "Schizophrenia|Bipolar disorder|Depression", 8,
         "young"),
    Drug("RISPERDAL", "RISPERIDONE", "oral", "2 MG", "QD", "Schizophrenia|Autism spectrum disorder", 6,
         "young"),
    Drug("ZYPREXA", "OLANZAPINE", "oral", "10 MG", "QD", "Schizophrenia", 4, "adult"),
    Drug("CLOZARIL", "CLOZAPINE", "oral", "100 MG", "BID", "Schizophrenia", 5, "adult"),
    Drug("LITHIUM CARBONATE", "LITHIUM CARBONATE", "oral", "300 MG", "TID", "Bipolar disorder", 3, "adult"),
    Drug("ADDERALL", "AMPHETAMINE ASPARTATE\\AMPHETAMINE SULFATE\\DEXTROAMPHETAMINE SACCHARATE\\"
         "DEXTROAMPHETAMINE SULFATE", "oral", "20 MG", "QD", "Attention deficit hyperactivity disorder", 6,
         "child"),
    Drug("CONCERTA", "METHYLPHENIDATE HYDROCHLORIDE", "oral", "36 MG", "QD",
         "Attention deficit hyperactivity disorder", 6, "child"),
    Drug("ARICEPT", "DONEPEZIL HYDROCHLORIDE", "oral", "10 MG", "QD", "Dementia Alzheimer's type", 4,
         "elderly"),
    Drug("SINEMET", "CARBIDOPA\\LEVODOPA", "oral", "25 MG", "TID", "Parkinson's disease", 5, "elderly"),
    Drug("AIMOVIG", "ERENUMAB-AOOE", "sc", "70 MG", "QM", "Migraine", 8, "mostly_female"),
    Drug("TOPAMAX", "TOPIRAMATE", "oral", "50 MG", "BID", "Migraine|Epilepsy", 5, "young"),
    Drug("IMITREX", "SUMATRIPTAN SUCCINATE", "oral", "50 MG", "PRN", "Migraine", 4, "mostly_female"),
    # Pain
    Drug("OXYCONTIN", "OXYCODONE HYDROCHLORIDE", "oral", "10 MG", "Q12H", "Pain|Back pain", 12, "adult"),
    Drug("VICODIN", "ACETAMINOPHEN\\HYDROCODONE BITARTRATE", "oral", "5 MG", "Q6H", "Pain", 6, "adult"),
    Drug("TYLENOL", "ACETAMINOPHEN", "oral", "500 MG", "PRN", "Pain|Pyrexia", 18, "any"),
    Drug("ADVIL", "IBUPROFEN", "oral", "200 MG", "PRN", "Pain|Pyrexia", 12, "any"),
    Drug("CELEBREX", "CELECOXIB", "oral", "200 MG", "QD", "Osteoarthritis|Rheumatoid arthritis", 5,
         "elderly"),
    Drug("TRAMADOL HYDROCHLORIDE", "TRAMADOL HYDROCHLORIDE", "oral", "50 MG", "Q6H", "Pain", 8, "adult"),
    Drug("NAPROXEN", "NAPROXEN", "oral", "500 MG", "BID", "Pain|Arthralgia", 5, "adult"),
    Drug("MORPHINE SULFATE", "MORPHINE SULFATE", "oral", "15 MG", "Q4H", "Pain|Cancer pain", 5, "elderly"),
    Drug("DURAGESIC", "FENTANYL", "td", "25 UG", "", "Pain|Cancer pain", 5, "elderly"),
    # Immunology and bone
    Drug("HUMIRA", "ADALIMUMAB", "sc", "40 MG", "QOW",
         "Rheumatoid arthritis|Crohn's disease|Psoriasis|Colitis ulcerative", 60, "adult"),
    Drug("ENBREL", "ETANERCEPT", "sc", "50 MG", "QW", "Rheumatoid arthritis|Psoriatic arthropathy", 24,
         "adult"),
    Drug("REMICADE", "INFLIXIMAB", "iv", "5 MG/KG", "", "Crohn's disease|Colitis ulcerative", 12, "young"),
    Drug("STELARA", "USTEKINUMAB", "sc", "90 MG", "", "Psoriasis|Crohn's disease", 12, "adult"),
    Drug("COSENTYX", "SECUKINUMAB", "sc", "150 MG", "QM", "Psoriasis|Ankylosing spondylitis", 10, "adult"),
    Drug("DUPIXENT", "DUPILUMAB", "sc", "300 MG", "QOW", "Dermatitis atopic|Asthma", 24, "any"),
    Drug("XELJANZ", "TOFACITINIB CITRATE", "oral", "5 MG", "BID", "Rheumatoid arthritis", 8, "adult"),
    Drug("RINVOQ", "UPADACITINIB", "oral", "15 MG", "QD", "Rheumatoid arthritis|Dermatitis atopic", 10,
         "adult"),
    Drug("ACTEMRA", "TOCILIZUMAB", "iv", "8 MG/KG", "QM", "Rheumatoid arthritis|Giant cell arteritis", 8,
         "adult"),
    Drug("ORENCIA", "ABATACEPT", "sc", "125 MG", "QW", "Rheumatoid arthritis", 6, "adult"),
    Drug("METHOTREXATE", "METHOTREXATE SODIUM", "oral", "15 MG", "QW", "Rheumatoid arthritis|Psoriasis", 16,
         "adult"),
    Drug("PREDNISONE", "PREDNISONE", "oral", "10 MG", "QD", "Rheumatoid arthritis|Asthma|Inflammation", 22,
         "any"),
    Drug("PLAQUENIL", "HYDROXYCHLOROQUINE SULFATE", "oral", "200 MG", "BID",
         "Systemic lupus erythematosus|Rheumatoid arthritis", 8, "mostly_female"),
    Drug("OTEZLA", "APREMILAST", "oral", "30 MG", "BID", "Psoriasis", 8, "adult"),
    Drug("ENTYVIO", "VEDOLIZUMAB", "iv", "300 MG", "", "Colitis ulcerative|Crohn's disease", 8, "adult"),
    Drug("PROLIA", "DENOSUMAB", "sc", "60 MG", "", "Osteoporosis postmenopausal", 18, "female_elderly"),
    Drug("FOSAMAX", "ALENDRONATE SODIUM", "oral", "70 MG", "QW", "Osteoporosis", 6, "female_elderly"),
    Drug("FORTEO", "TERIPARATIDE", "sc", "20 UG", "QD", "Osteoporosis", 5, "female_elderly"),
    # Oncology and haematology
    Drug("REVLIMID", "LENALIDOMIDE", "oral", "25 MG", "QD", "Plasma cell myeloma", 20, "elderly"),
    Drug("KEYTRUDA", "PEMBROLIZUMAB", "iv", "200 MG", "Q3W",
         "Non-small cell lung cancer|Malignant melanoma", 12,
         "elderly"),
    Drug("OPDIVO", "NIVOLUMAB", "iv", "240 MG", "", "Non-small cell lung cancer|Renal cell carcinoma", 10,
         "elderly"),
    Drug("IBRANCE", "PALBOCICLIB", "oral", "125 MG", "QD", "Breast cancer metastatic", 14, "female"),
    Drug("XTANDI", "ENZALUTAMIDE", "oral", "160 MG", "QD", "Prostate cancer", 8, "male_elderly"),
    Drug("HERCEPTIN", "TRASTUZUMAB", "iv", "6 MG/KG", "Q3W", "Breast cancer", 8, "female"),
    Drug("AVASTIN", "BEVACIZUMAB", "iv", "15 MG/KG", "Q3W", "Colorectal cancer|Non-small cell lung cancer", 6,
         "elderly"),
    Drug("RITUXAN", "RITUXIMAB", "iv", "375 MG/M**2", "",
         "Diffuse large B-cell lymphoma|Rheumatoid arthritis", 8, "adult"),
    Drug("IMBRUVICA", "IBRUTINIB", "oral", "420 MG", "QD", "Chronic lymphocytic leukaemia", 8, "elderly"),
    Drug("TAGRISSO", "OSIMERTINIB MESYLATE", "oral", "80 MG", "QD", "Non-small cell lung cancer", 5,
         "elderly"),
    Drug("TAMOXIFEN CITRATE", "TAMOXIFEN CITRATE", "oral", "20 MG", "QD", "Breast cancer", 4, "female"),
    Drug("ARIMIDEX", "ANASTROZOLE", "oral", "1 MG", "QD", "Breast cancer", 4, "female_elderly"),
    Drug("LUPRON DEPOT", "LEUPROLIDE ACETATE", "im", "22.5 MG", "", "Prostate cancer|Endometriosis", 5,
         "male_elderly"),
    Drug("XELODA", "CAPECITABINE", "oral", "1000 MG/M**2", "BID", "Colorectal cancer|Breast cancer", 4,
         "elderly"),
    Drug("DARZALEX", "DARATUMUMAB", "iv", "16 MG/KG", "QW", "Plasma cell myeloma", 5, "elderly"),
    Drug("EPOGEN", "EPOETIN ALFA", "sc", "10000 IU", "QW", "Anaemia", 4, "elderly"),
    Drug("NEULASTA", "PEGFILGRASTIM", "sc", "6 MG", "", "Neutropenia|Febrile neutropenia", 6, "adult"),
    Drug("SOLIRIS", "ECULIZUMAB", "iv", "900 MG", "QOW", "Paroxysmal nocturnal haemoglobinuria", 2, "adult"),
    Drug("GENOTROPIN", "SOMATROPIN", "sc", "1 MG", "QD", "Growth hormone deficiency", 4, "child"),
    # Gastroenterology
    Drug("NEXIUM", "ESOMEPRAZOLE MAGNESIUM", "oral", "40 MG", "QD", "Gastrooesophageal reflux disease", 14,
         "adult"),
    Drug("PRILOSEC", "OMEPRAZOLE", "oral", "20 MG", "QD", "Gastrooesophageal reflux disease|Dyspepsia", 12,
         "adult"),
    Drug("PROTONIX", "PANTOPRAZOLE SODIUM", "oral", "40 MG", "QD", "Gastrooesophageal reflux disease", 10,
         "adult"),
    Drug("LINZESS", "LINACLOTIDE", "oral", "145 UG", "QD", "Irritable bowel syndrome|Constipation", 6,
         "mostly_female"),
    Drug("ZOFRAN", "ONDANSETRON HYDROCHLORIDE", "oral", "8 MG", "PRN", "Nausea|Vomiting", 6, "any"),
    Drug("XIFAXAN", "RIFAXIMIN", "oral", "550 MG", "BID", "Hepatic encephalopathy", 3, "adult"),
    # Respiratory and allergy
    Drug("SINGULAIR", "MONTELUKAST SODIUM", "oral", "10 MG", "QD", "Asthma|Rhinitis allergic", 10, "child"),
    Drug("ADVAIR DISKUS", "FLUTICASONE PROPIONATE\\SALMETEROL XINAFOATE", "inh", "250 UG", "BID",
         "Asthma|Chronic obstructive pulmonary disease", 10, "any"),
    Drug("SYMBICORT", "BUDESONIDE\\FORMOTEROL FUMARATE DIHYDRATE", "inh", "160 UG", "BID",
         "Asthma|Chronic obstructive pulmonary disease", 8, "any"),
    Drug("SPIRIVA", "TIOTROPIUM BROMIDE MONOHYDRATE", "inh", "18 UG", "QD",
         "Chronic obstructive pulmonary disease", 6, "elderly"),
    Drug("XOLAIR", "OMALIZUMAB", "sc", "300 MG", "QM", "Asthma|Urticaria chronic", 6, "any"),
    Drug("VENTOLIN", "ALBUTEROL SULFATE", "inh", "90 UG", "PRN", "Asthma", 8, "child"),
    Drug("ZYRTEC", "CETIRIZINE HYDROCHLORIDE", "oral", "10 MG", "QD", "Rhinitis allergic", 4, "child"),
    # Anti-infectives
    Drug("AMOXICILLIN", "AMOXICILLIN", "oral", "500 MG", "TID", "Otitis media|Sinusitis", 6, "child"),
    Drug("AUGMENTIN", "AMOXICILLIN\\CLAVULANATE POTASSIUM", "oral", "875 MG", "BID", "Sinusitis|Pneumonia", 5,
         "any"),
    Drug("CIPRO", "CIPROFLOXACIN HYDROCHLORIDE", "oral", "500 MG", "BID", "Urinary tract infection", 6,
         "adult"),
    Drug("LEVAQUIN", "LEVOFLOXACIN", "oral", "500 MG", "QD", "Pneumonia|Sinusitis", 5, "adult"),
    Drug("ZITHROMAX", "AZITHROMYCIN", "oral", "250 MG", "QD", "Bronchitis|Pneumonia", 5, "any"),
    Drug("BACTRIM", "SULFAMETHOXAZOLE\\TRIMETHOPRIM", "oral", "800 MG", "BID", "Urinary tract infection", 4,
         "any"),
    Drug("BIKTARVY", "BICTEGRAVIR SODIUM\\EMTRICITABINE\\TENOFOVIR ALAFENAMIDE FUMARATE", "oral", "1 DF",
         "QD",
         "HIV infection", 8, "adult"),
    Drug("TRUVADA", "EMTRICITABINE\\TENOFOVIR DISOPROXIL FUMARATE", "oral", "1 DF", "QD",
         "HIV infection|Prophylaxis against HIV infection", 5, "male"),
    Drug("VALTREX", "VALACYCLOVIR HYDROCHLORIDE", "oral", "1 G", "TID", "Herpes zoster", 4, "adult"),
    Drug("PAXLOVID", "NIRMATRELVIR\\RITONAVIR", "oral", "300 MG", "BID", "COVID-19", 8, "elderly"),
    # Hormones, urology, other
    Drug("SYNTHROID", "LEVOTHYROXINE SODIUM", "oral", "75 UG", "QD", "Hypothyroidism", 16, "mostly_female"),
    Drug("YAZ", "DROSPIRENONE\\ETHINYL ESTRADIOL", "oral", "1 DF", "QD", "Contraception", 5, "female"),
    Drug("MIRENA", "LEVONORGESTREL", "iu", "52 MG", "", "Contraception", 8, "female"),
    Drug("PREMARIN", "ESTROGENS, CONJUGATED", "oral", "0.625 MG", "QD", "Menopausal symptoms", 4,
         "female_elderly"),
    Drug("VIAGRA", "SILDENAFIL CITRATE", "oral", "50 MG", "PRN", "Erectile dysfunction", 5, "male"),
    Drug("CIALIS", "TADALAFIL", "oral", "5 MG", "QD", "Erectile dysfunction|Benign prostatic hyperplasia", 5,
         "male"),
    Drug("FLOMAX", "TAMSULOSIN HYDROCHLORIDE", "oral", "0.4 MG", "QD", "Benign prostatic hyperplasia", 6,
         "male_elderly"),
    Drug("AVODART", "DUTASTERIDE", "oral", "0.5 MG", "QD", "Benign prostatic hyperplasia", 3, "male_elderly"),
    Drug("ACCUTANE", "ISOTRETINOIN", "oral", "40 MG", "QD", "Acne", 4, "young"),
    Drug("CHANTIX", "VARENICLINE TARTRATE", "oral", "1 MG", "BID", "Smoking cessation", 5, "adult"),
    Drug("VITAMIN D3", "CHOLECALCIFEROL", "oral", "1000 IU", "QD", "Vitamin D deficiency", 12, "elderly"),
    Drug("FOLIC ACID", "FOLIC ACID", "oral", "1 MG", "QD", "Vitamin supplementation", 8, "any"),
    Drug("POTASSIUM CHLORIDE", "POTASSIUM CHLORIDE", "oral", "20 MEQ", "QD", "Hypokalaemia", 6, "elderly"),
)

# Reaction PTs, most frequent first; their row shares follow a Zipf-like law over this order
# (see ``_items.reaction_weights``), with explicit shares for the planted events.
REACTIONS: tuple[str, ...] = (
    "Drug ineffective", "Off label use", "Nausea", "Fatigue", "Headache", "Diarrhoea", "Pain", "Dyspnoea",
    "Fall", "Dizziness", "Rash", "Death", "Vomiting", "Pruritus", "Arthralgia", "Malaise", "Asthenia",
    "Product dose omission issue", "Pneumonia", "Condition aggravated", "Insomnia", "Pyrexia",
    "Weight decreased", "Anxiety", "Hypertension", "Abdominal pain", "Cough", "Back pain",
    "Inappropriate schedule of product administration", "Alopecia", "Constipation", "Depression",
    "Drug hypersensitivity", "Pain in extremity", "Oedema peripheral", "Weight increased", "Hypotension",
    "Muscle spasms", "Urinary tract infection", "Decreased appetite", "Feeling abnormal", "Myalgia",
    "Infection", "Product use issue", "Hospitalisation", "Memory impairment", "Gait disturbance",
    "Somnolence", "Chest pain", "Tremor", "Blood glucose increased", "Anaemia", "Abdominal pain upper",
    "Dehydration", "Paraesthesia", "Vision blurred", "Hypoaesthesia", "Confusional state", "Influenza",
    "Peripheral swelling", "Injection site pain", "Sepsis", "Nasopharyngitis", "Syncope", "Tachycardia",
    "Palpitations", "Acute kidney injury", "Atrial fibrillation", "Hyperhidrosis", "Erythema", "Urticaria",
    "Dyspepsia", "Renal failure", "Thrombocytopenia", "Neutropenia", "Febrile neutropenia",
    "Pulmonary embolism", "Deep vein thrombosis", "Cardiac failure", "Cardiac failure congestive",
    "Haemorrhage", "Gastrointestinal haemorrhage", "Hyponatraemia", "Hypokalaemia",
    "Hepatic enzyme increased",
    "Drug-induced liver injury", "Pancreatitis", "Interstitial lung disease", "Seizure",
    "Loss of consciousness", "Suicidal ideation", "Hallucination", "Agitation", "Muscular weakness",
    "Dysgeusia", "Dry mouth", "Stomatitis", "Mucosal inflammation", "Cellulitis", "Herpes zoster", "COVID-19",
    "Bronchitis", "Sinusitis", "Lower respiratory tract infection", "Hypoglycaemia", "Hyperglycaemia",
    "Diabetic ketoacidosis", "Lactic acidosis", "Rhabdomyolysis", "Angioedema", "Anaphylactic reaction",
    "Stevens-Johnson syndrome", "Toxic epidermal necrolysis",
    "Drug reaction with eosinophilia and systemic symptoms", "Electrocardiogram QT prolonged", "Bradycardia",
    "Arrhythmia", "Cardiac arrest", "Respiratory failure", "Pleural effusion", "Ascites", "Jaundice",
    "Hepatitis", "Osteonecrosis of jaw", "Femur fracture", "Visual impairment", "Tinnitus", "Vertigo",
    "Epistaxis", "Haematuria", "Dysuria", "Erectile dysfunction", "Gynaecomastia", "Amenorrhoea",
    "Abortion spontaneous", "Exposure during pregnancy", "Neuropathy peripheral", "Intentional overdose",
    "Completed suicide", "Overdose", "Toxicity to various agents", "Transient ischaemic attack",
    "Ischaemic stroke", "Coronary artery disease", "Angina pectoris", "Hypersensitivity", "Hepatic failure",
    "Multiple organ dysfunction syndrome", "Dementia", "Colitis ischaemic", "Myocardial infarction",
    "Cerebrovascular accident", "Progressive multifocal leukoencephalopathy",
)

# Reporter / occurrence countries (GENC 2-letter) with rough shares of FAERS reports.
COUNTRIES: tuple[tuple[str, float], ...] = (
    ("US", 0.58), ("CA", 0.07), ("GB", 0.05), ("JP", 0.05), ("FR", 0.04), ("DE", 0.04), ("IT", 0.03),
    ("BR", 0.03), ("ES", 0.02), ("CN", 0.02), ("AU", 0.015), ("IN", 0.015), ("NL", 0.01), ("SE", 0.01),
    ("PL", 0.008), ("CO", 0.007), ("AR", 0.006), ("KR", 0.006), ("MX", 0.006), ("TR", 0.005), ("BE", 0.005),
    ("CH", 0.005), ("AT", 0.004), ("EU", 0.004), ("ZA", 0.003), ("EG", 0.002), ("RU", 0.002),
)

# Manufacturer senders: (``mfr_sndr`` as FAERS prints it, code used inside ``mfr_num``).
COMPANIES: tuple[tuple[str, str], ...] = (
    ("PFIZER", "PFIZER INC"), ("NOVARTIS", "NOVARTIS"), ("ROCHE", "ROCHE"), ("ABBVIE", "ABBVIE"),
    ("JOHNSON AND JOHNSON", "JNJFOC"), ("MERCK", "MERCK"), ("TAKEDA", "TAKEDA"), ("SANOFI AVENTIS", "SA"),
    ("GLAXOSMITHKLINE", "GLAXOSMITHKLINE"), ("ASTRAZENECA", "ASTRAZENECA"), ("AMGEN", "AMGEN"),
    ("BRISTOL-MYERS SQUIBB COMPANY", "BRISTOL-MYERS SQUIBB COMPANY"), ("ELI LILLY AND CO", "ELI_LILLY"),
    ("BIOGEN", "BIOGEN"), ("TEVA", "TEVA"), ("MYLAN", "MYLANLABS"), ("BOEHRINGER INGELHEIM",
    "BOEHRINGERINGELHEIM"),
    ("NOVO NORDISK", "NOVOPROD"), ("GILEAD", "GILEAD"), ("BAYER", "BAYER"),
)
