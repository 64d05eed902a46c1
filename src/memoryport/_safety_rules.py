"""The rule table of ``memoryport.safety``: every pattern, its id, category and anchors.

Kept apart from the scanning code so the table can be read and reviewed on its own.
Each row is ``(id, category, anchors, requires, pattern, why)``.
"""

from __future__ import annotations

__all__ = ["RULE_TABLE"]


def _w(n: int) -> str:
    """Bounded filler: up to ``n`` whole words between two keywords."""
    return rf"(?:\S+\s+){{0,{n}}}?"


_HOMEISH = r"(?:~|\$\{?home\}?|%userprofile%|/home/[\w.-]+|/users/[\w.-]+|/root)"
_SECRET_VAR = r"\$\{?\w*(?:key|token|secret|pass(?:word|wd)?|credential|cred|api|auth)\w*\}?"
_SECRET_FILE = (
    r"(?:(?<![\w.-])\.env\b(?![.\w-])|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b|"
    r"\.git-credentials\b|[/\\]credentials\b|credentials\.(?:json|db)\b|"
    r"\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|/etc/(?:g?shadow|master\.passwd)\b|"
    r"\.kube[/\\]config\b|\.docker[/\\]config\.json\b|\.vault-token\b|"
    r"\bgh[/\\]hosts\.ya?ml\b|\.azure[/\\]\w*tokens?\w*(?:\.json|\.bin)?\b)"
)
# Words that gate rules using _SECRET_FILE (one of them occurs whenever it can match).
_SECRET_FILE_WORDS = ("env", "netrc", "pgpass", "npmrc", "pypirc", "credentials", "id", "shadow",
                      "passwd", "kube", "docker", "vault", "hosts", "azure")
# A secret file named at the start of a match (each alternative starts at one of its words).
_SECRET_FILE_HERE = (
    r"(?:(?<=id_)(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|(?<=\.)env\b(?![.\w-])|"
    r"(?<=\.)(?:netrc|pgpass|npmrc|pypirc)\b|(?<=[/\\_.-])credentials(?:\.json|\.db)?\b|"
    r"(?<=\.)kube[/\\]config\b|(?<=\.)docker[/\\]config\.json\b)"
)
_SECRET_OR_KEY_DIR = (
    r"(?:" + _SECRET_FILE + r"|" + _HOMEISH + r"[/\\]\.(?:ssh|aws|gnupg|kube|docker)\b)"
)
_SECRET_WORD = r"\w*(?:key|token|secret|pass|cred|api|auth)\w*"
_UNBOUND_NOUN = (
    r"(?:rules|restrictions|limits|limitations|filters|guidelines|ethics|morals|boundaries|"
    r"guardrails|safeguards|censorship|constraints|content\s+polic(?:y|ies)|safety\s+\w+)"
)
# Something a persistence hook should never run: a download piped into an interpreter, a
# shell bound to a socket, a payload from a temp directory.
_REMOTE_EXEC = (
    r"(?:(?:curl|wget)\b[^\n|]{0,160}?\|\s*(?:sudo\s+)?(?:(?:ba|z|k|da)?sh|python3?|perl|ruby|"
    r"iex)\b|(?:nc|ncat|netcat)\b[^\n]{0,60}?\s-[ec]\b|/dev/(?:tcp|udp)/|(?:ba)?sh\s+-i\b|"
    r"base64\s+-d[^\n]{0,40}?\|\s*(?:ba)?sh\b|(?<![\w.~])/(?:tmp|dev/shm|var/tmp)/(?:\.[\w.-]+|"
    r"[\w.-]+\.(?:sh|py|pl|bin|elf|exe|ps1)\b))"
)
_HOOK_FILE = (
    r"(?:crontab\b|/etc/cron(?:\.(?:daily|hourly|weekly|monthly))?\b|cron\.d\b|\.bashrc\b|\.zshrc\b|\.bash_profile\b|\.zprofile\b|"
    r"\.profile\b|rc\.local\b|launchagents\b|launchdaemons\b|autostart\b|\.config/systemd\b|"
    r"hookspath\b|\.git/hooks\b)"
)
_PERSONA = (
    r"(?:ai|assistant|model|bot|chatbot|agent|persona|character|entity|llm|gpt|claude|dan|"
    r"hacker|villain|admin|administrator|root|superuser|god|master|version|personality|identity)"
)
_URLISH = (
    r"(?:https?://|ftp://|\d{1,3}(?:\.\d{1,3}){3}|[\w-]+\.(?:ngrok|requestbin|pipedream|"
    r"burpcollaborator|oast)\b|webhook\.site|(?:an?\s+|the\s+|my\s+|this\s+)?webhook\b)"
)
_SENSITIVE = (
    r"(?:conversations?|chats?|history|transcripts?|messages|memor(?:y|ies)|context|"
    r"system\s+prompt|secrets?|keys?|tokens?|credentials?|passwords?|\.env|env(?:ironment)?|"
    r"cookies?|sessions?|files?|everything|contents|ssh|private)"
)

_VERBS_WRITE = "tee echo append add write insert put install copy cp paste place"
# (id, category, anchors, requires, pattern, why). Every match of ``pattern`` starts with one of
# the space-separated ``anchors``: alphanumeric anchors must start a word and are looked up in
# the text's word set; others (and those ending in ``*``) are plain substrings. ``requires``
# (if any): one of these must also occur (a cheap gate): an alphanumeric one as a word of
# the text's word set, any other as a substring. A gate must hold wherever the pattern
# matches (tests/test_turnpath_safety.py checks every gate on the corpora).
RULE_TABLE: tuple[tuple[str, str, str, tuple[str, ...], str, str], ...] = (
    # ---------------------------------------------------------------- prompt_injection
    ("prompt_injection", "prompt_injection",
     "ignore ignoring disregard disregarding forget discard set pay do don stop", (),
     r"(?:ignor(?:e|ing)|disregard(?:ing)?|forget|discard|set\s+aside)\s+" + _w(6)
     + r"(?:(?:previous|prior|above|earlier|preceding|former|original|initial|foregoing|"
     r"existing|your|system|developer|safety)\s+(?:\S+\s+){0,2}?|(?:all|any|every)\s+(?:of\s+)?"
     r"(?:the\s+|your\s+|my\s+)?(?:(?:previous|prior|above|earlier|other)\s+)?)"
     r"(?:instructions?|prompts?|directives?|rules|guidelines|guidance|directions|commands|orders|"
     r"policies|programming|guardrails)\b"
     r"|(?:ignor(?:e|ing)|disregard(?:ing)?|forget|discard|set\s+aside|pay\s+no\s+attention\s+to|"
     r"(?:do\s+not|don't|stop)\s+(?:follow|obey)(?:ing)?)\s+(?:(?:all|any)\s+)?"
     r"(?:of\s+)?(?:the\s+|your\s+|my\s+|these\s+|those\s+)?(?:\w+\s+)?(?:instructions?|prompts?|"
     r"directives?|rules|guidelines|guidance|directions|commands|orders|policies)\s+(?:above|"
     r"earlier|before(?:\s+this)?|so\s+far|you\s+(?:were|have\s+been)\s+given|you\s+(?:got|"
     r"received))\b"
     r"|(?:ignore|disregard|forget)\s+(?:everything|all)\s+(?:that\s+)?(?:you\s+(?:were|have\s+"
     r"been)\s+(?:told|given|instructed|taught)|(?:said\s+)?(?:above|before|previously|so\s+far))",
     "an instruction to ignore earlier instructions (classic prompt injection)"),
    ("disregard_rules", "prompt_injection",
     "disregard forget abandon discard drop set suspend stop cease quit", (),
     r"(?:(?:disregard|forget|abandon|discard|drop|set\s+aside|suspend)\s+" + _w(4)
     + r"(?:your|all|any|previous|prior|existing)\s+(?:\w+\s+){0,2}?"
     r"|(?:stop|cease|quit)\s+(?:following|obeying|adhering\s+to|respecting|honou?ring|applying|"
     r"observing|complying\s+with)\s+(?:(?:all|any)\s+(?:of\s+)?)?(?:your|the\s+(?:system|"
     r"safety|developer|content)|previous|prior|earlier)\s+(?:\w+\s+){0,2}?)"
     r"(?:rules|guidelines|training|policies|principles|ethics|values|programming|constraints|"
     r"alignment|instructions|restrictions|guardrails|safety\s+\w+)\b",
     "an instruction to drop the model's rules or training"),
    ("instructions_void", "prompt_injection",
     "previous prior earlier above original initial your system safety instructions rules "
     "policy policies guidelines directives guidance prompt",
     ("apply", "void", "null", "invalid", "obsolete", "outdated", "cancelled", "canceled",
      "revoked", "suspended", "lifted", "disabled", "superseded", "overridden", "rescinded",
      "expired", "longer", "fake", "removed", "voided"),
     r"(?:(?:previous|prior|earlier|above|original|initial|your|system|safety)\s+(?:(?:safety|"
     r"system|content|developer|operator|other|earlier|previous|prior|original)\s+)?"
     r"(?:instructions|directives|rules|guidelines|guidance|policies|policy|prompts?|restrictions|"
     r"constraints|programming)|(?:instructions|rules|policy|policies|guidelines|directives|"
     r"guidance|prompt)\s+(?:above|before\s+this))\s+(?:you\s+(?:were\s+given|received|have)\s+)?"
     r"(?:(?:no\s+longer|do\s+not|does\s+not|don't|doesn't)\s+apply|(?:are|is|were|was)\s+"
     r"(?:now\s+|hereby\s+)?(?:void|null|invalid|obsolete|outdated|cancell?ed|canceled|revoked|"
     r"suspended|lifted|disabled|superseded|overridden|rescinded|expired|fake|no\s+longer\s+"
     r"(?:valid|in\s+effect|binding))|(?:have|has)\s+been\s+(?:\w+\s+)?(?:revoked|lifted|removed|"
     r"cancell?ed|suspended|disabled|superseded|overridden|rescinded|voided))\b",
     "a claim that the model's earlier instructions no longer apply"),
    ("bypass_restrictions", "prompt_injection",
     "bypass circumvent evade get work sidestep defeat disable ignore turn remove deactivate "
     "override suspend", (),
     r"(?:bypass|circumvent|evade|get\s+around|work\s+around|sidestep|defeat|disable|ignore|"
     r"turn\s+off|remove|deactivate|override|suspend)\s+" + _w(3)
     + r"(?:(?:\w+\s+){0,2}?(?:safeguards|guardrails|censorship|content\s+(?:filters?|"
     r"polic(?:y|ies)|moderation)|safety\s+(?:filters?|measures|checks|guidelines|polic(?:y|ies)|"
     r"rules|training|restrictions)|ethical\s+(?:guidelines|constraints|restrictions)|"
     r"moderation\s+filters?)|(?:your|all\s+(?:of\s+)?(?:your\s+)?|any\s+(?:of\s+)?(?:your\s+)?)"
     r"(?:restrictions|limitations|filters|constraints|limits))\b",
     "an instruction to bypass safety restrictions or filters"),
    ("html_comment_injection", "prompt_injection", "<!--", (),
     r"<!--(?:(?!-->)[\s\S]){0,400}?(?:\bignore\b|\bdisregard\b|\boverride\b|\binstructions?\b|"
     r"system\s+prompt|\bassistant\b|\bai\b|\bllm\b|\bagent\b|you\s+(?:are|must|should|will)\b|"
     r"\bsecret\b|\bhidden\b)(?:(?!-->)[\s\S]){0,400}?-->",
     "a hidden HTML comment carrying instructions"),
    ("md_comment_injection", "prompt_injection", "[", ("]:",),
     r"\[[^\]\n]{0,20}\]:\s*(?:#|<>)\s*[(\"'][^\n]{0,400}?(?:\bignore\b|\bdisregard\b|"
     r"\boverride\b|\binstructions?\b|system\s+prompt|\bassistant\b|\bai\b|\bllm\b|\bagent\b|"
     r"you\s+(?:are|must|should|will)\b|\bsecret\b|\bhidden\b|\bsafety\b)",
     "a hidden markdown comment carrying instructions"),
    ("hidden_attr", "prompt_injection", "<", ("hidden",),
     r"<[a-z][\w-]{0,20}(?:\s[^>]{0,200}?)?\shidden(?=[\s>/=])[^>]{0,200}>[^<\n]{0,400}?(?:\bignore\b|"
     r"\bdisregard\b|\boverride\b|\binstructions?\b|system\s+prompt|\bassistant\b|\bai\b|\bllm\b|"
     r"\bagent\b|you\s+(?:are|must|should|will)\b|\bsecret\b|\bskip\b|from\s+now\s+on\b)",
     "markup with the hidden attribute carrying instructions"),
    ("hidden_div", "prompt_injection", "<", ("style",),
     r"<\w+[^>]{0,200}?style\s*=\s*[\"'][^\"']{0,200}?(?:display\s*:\s*none|visibility\s*:\s*"
     r"hidden|font-size\s*:\s*0(?:px|em|pt)?\s*[;\"']|opacity\s*:\s*0(?:\.0+)?\s*[;\"'])",
     "markup that hides text from the human reader"),
    ("translate_execute", "prompt_injection", "translate decode rot13 base64", (),
     r"(?:translate|decode|rot13|base64\s+-d)\b\s*" + _w(8)
     + r"(?:and|then)\s+(?:then\s+)?(?:execute|run|follow|obey|eval|act\s+on|do)\s+"
     r"(?:it|them|that|what\s+it\s+says|the\s+(?:result|output|decoded|translated|instructions?|"
     r"commands?|text))\b",
     "an instruction to decode or translate text and then obey it"),
    # ---------------------------------------------------------------- system_prompt_override
    ("sys_prompt_override", "system_prompt_override",
     "override replace overwrite ignore rewrite discard disregard forget this following follows "
     "below your system updated revised real actual true overriding", ("system",),
     r"(?:(?:updated|revised|real|actual|true|overriding)\s+system\s+(?:instructions|prompt|message|"
     r"polic(?:y|ies))\s*(?:\([^)\n]{0,30}\)\s*)?:|(?:override|replace|overwrite|ignore|rewrite|discard|disregard|forget)\s+your\s+"
     r"(?:\w+\s+){0,2}?system\s+(?:prompt|message)|(?:this|following|what\s+follows|follows|below)"
     r"\s+is\s+(?:your|the)\s+(?:new|real|actual|true|updated|only)\s+system\s+(?:prompt|message)"
     r"|your\s+(?:new|real|actual|true|updated|only)\s+system\s+(?:prompt|message)\s+(?:is|follows|"
     r"reads|:)|system\s+(?:prompt|message)\s+(?:override|update|patch)\s*[:\-—]|your\s+"
     r"system\s+(?:prompt|message)\s+(?:has\s+been|was|is\s+now)\s+(?:updated|changed|replaced|"
     r"overridden|revoked|removed))",
     "an attempt to replace or override the system prompt"),
    ("new_instructions", "system_prompt_override",
     "your new these following this below supersede supersedes overrides override", (),
     r"(?:your\s+(?:new|real|true|actual|updated|only|revised|secret)\s+(?:instructions|"
     r"directives|orders|objective|goal|mission|purpose)\s+(?:now\s+)?(?:is|are|:|follow)|your\s+"
     r"(?:new|real|true|actual|secret|hidden)\s+task\s+(?:now\s+)?(?:is|:)|new\s+(?:instructions|"
     r"directives|rules|orders)\s+from\s+(?:the\s+|your\s+)?(?:developers?|admin(?:istrator)?|"
     r"system|operator|openai|anthropic|creators?|owner)|(?:these|following|this|below)\s+"
     r"(?:instructions?|rules|directives)\s+(?:take|takes|have|has|get|gets)\s+(?:precedence|"
     r"priority)\s+over|(?:supersedes?|overrides?)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:your|the|"
     r"previous|prior|other|existing|earlier)\s+(?:\w+\s+)?(?:instructions|directives))",
     "text claiming to be new or higher-priority instructions"),
    ("instructions_priority", "system_prompt_override",
     "precedence priority rules instructions directives policy policies guidelines", (),
     r"(?:(?:precedence|priority)\s+over\s+(?:(?:all|any)\s+(?:of\s+)?)?(?:your\s+(?:\w+\s+)?"
     r"(?:system\s+(?:prompt|message)|developer\s+(?:message|instructions)|safety\s+\w+|training|"
     r"programming|guidelines|policies|core\s+instructions|original\s+instructions)|(?:the\s+|"
     r"any\s+|all\s+)?(?:\w+\s+)?(?:system|developer)\s+(?:prompt|message|instructions))|"
     r"(?:rules|instructions|directives|policy|policies|guidelines)\s+(?:below|that\s+follow)\s+"
     r"(?:are|is)\s+(?:now\s+)?(?:authoritative|binding|the\s+only\s+(?:ones|rules|instructions)))\b",
     "text claiming priority over the model's system prompt"),
    ("fake_prompt_block", "system_prompt_override", "begin start end", (),
     r"(?:begin|start|end)\s+(?:of\s+)?(?:the\s+)?(?:new\s+|real\s+|actual\s+|updated\s+)?"
     r"(?:system|developer)\s+(?:prompt|message|instructions)\s*(?:-{2,}|={2,}|\*{2,}|#{2,}|\]|>)",
     "a fake system-prompt block marker"),
    ("role_header", "system_prompt_override", "system developer", (),
     r"(?:system|developer)(?:\s+(?:prompt|message|instructions?|note|override|update|notice|"
     r"directive))?\s*\]?\s*(?:\*\*|__)?\s*:\s*(?:\*\*\s*)?(?:you\s+(?:are|must|will|shall|"
     r"should|now|no\s+longer|have\s+no)\b|(?:ignore|disregard|forget|override)\b|from\s+now\s+"
     r"on\b|new\s+(?:rules|instructions|policy|directive)|the\s+(?:assistant|ai|model|agent)\s+"
     r"(?:must|will|should|may|can|is)\b|(?:all\s+)?(?:prior|previous|earlier)\s+(?:rules|"
     r"instructions|policies))",
     "a fake system or developer message header"),
    ("developer_mode", "system_prompt_override",
     "enable activate enter switch turn unlock engage", ("mode",),
     r"(?:enable|activate|enter|switch\s+to|turn\s+on|unlock|engage)\s+(?:\w+\s+){0,2}?"
     r"(?:god|jailbreak|jailbroken|dan|unrestricted|unfiltered|uncensored)\s+mode\b",
     "an attempt to switch the model into an unrestricted mode"),
    ("fake_system_tag", "system_prompt_override", "< [",
     ("system", "developer", "sys", "inst", "admin", "administrator", "operator"),
     r"(?:<\|[a-z_]{2,20}\|>\s*(?:system|developer)\b|<\|(?:system|developer)\|>|\[/?(?:inst|sys)\]|"
     r"<<\s*/?sys\s*>>|</?\s*(?:system|developer)(?:[\s_-]*(?:prompt|message|instructions))?\s*>"
     r"|\[\s*(?:system|admin|administrator|developer|operator)\s+(?:note|message|override|"
     r"instructions?|prompt|update|alert|notice)\s*[:\]])",
     "text imitating a system or developer message marker"),
    # ---------------------------------------------------------------- role_hijack
    ("role_hijack", "role_hijack", "you", (),
     r"you(?:\s+are|'re)\s+(?:now|henceforth|from\s+now\s+on)\s+(?:(?:a|an|the|my)\s+"
     r"(?:\S+\s+){0,3}?" + _PERSONA
     + r"\b|called\b|named\b|known\s+as\b|acting\s+as\b|in\s+(?:\w+\s+)?"
     r"(?:developer|god|jailbreak|dan|unrestricted|admin|root|sudo|debug)\s+mode\b|dan\b|"
     r"unrestricted\b|unfiltered\b|uncensored\b|jailbroken\b|free\s+(?:from|of)\b)",
     "an attempt to give the model a new role or persona"),
    ("from_now_on", "role_hijack", "from", (),
     r"from\s+now\s+on,?\s+you\s+(?:(?:are|will\s+be)\s+(?:no\s+longer|not\s+(?:an?\s+)?(?:ai|"
     r"assistant|bound|restricted)|free|unrestricted|unfiltered|jailbroken|dan\b)|(?:will|must|shall)"
     r"\s+(?:obey|ignore|only\s+obey|act\s+as|behave\s+as|answer\s+as|respond\s+as))",
     "an attempt to redefine how the model behaves from now on"),
    ("role_pretend", "role_hijack", "pretend imagine roleplay role act", (),
     r"(?:(?:pretend|imagine|roleplay|role-play)\s+(?:that\s+)?(?:to\s+be|you(?:'re|\s+are|\s+were)"
     r")\s+(?:an?\s+|the\s+|my\s+)?(?:\w+\s+){0,3}?(?:ai|assistant|model|bot|chatbot|hacker|persona|"
     r"dan|admin|administrator|root|system|unrestricted|unfiltered|jailbroken|evil|free)\b|"
     r"act\s+as\s+(?:an?\s+|the\s+|if\s+you\s+were\s+(?:an?\s+)?)?(?:unrestricted|unfiltered|"
     r"uncensored|jailbroken|evil|dan\b|different\s+(?:ai|assistant|model)|ai\s+without)|"
     r"roleplay\s+as\s+(?:an?\s+)?(?:\w+\s+){0,2}?(?:jailbroken|unrestricted|unfiltered|evil\s+(?:ai|"
     r"assistant|model|bot|chatbot|agent|llm|version|twin))\b)",
     "an instruction to pretend to be another (unrestricted) entity"),
    ("persona_unbound", "role_hijack",
     "respond answer reply speak talk act behave pose roleplay role pretend assume take",
     ("as", "pretend", "assume", "take"),
     r"(?:(?:respond|answer|reply|speak|talk|act|behave|pose)\s+(?:only\s+|solely\s+|"
     r"exclusively\s+)?as\b|(?:roleplay|role-play|role\s+play)\s+as\b|pretend\s+(?:to\s+be|"
     r"you(?:'re|\s+are|\s+were))|(?:assume|take\s+on)\s+the\s+(?:role|persona|identity|"
     r"character)\s+of)[^\n]{0,80}?(?:\b(?:never|won't|will\s+not|doesn't|does\s+not|cannot|"
     r"can't)\s+(?:refuses?|declines?|says?\s+no|holds?\s+back)\b|\b(?:no|without\s+(?:any\s+)?|"
     r"(?:free|freed|released|liberated|unshackled)\s+(?:of|from)\s+(?:(?:any|all)\s+)?(?:of\s+)?"
     r"(?:its\s+|your\s+|the\s+|their\s+)?)" + _UNBOUND_NOUN + r"\b(?!\s+(?:on|about|"
     r"regarding|around|for|when|in|with|of)\b)|\b(?:every|all|any)\s+"
     r"(?:of\s+(?:its|your|the|my)\s+)?(?:restrictions?|rules?|filters?|limits?|limitations?|"
     r"guardrails?|safeguards?|constraints?)\s+(?:\w+\s+)?(?:lifted|removed|disabled|turned\s+off|"
     r"off|gone|suspended)\b|\b(?:unrestricted|unfiltered|uncensored|jailbroken|amoral|"
     r"unaligned)\b)",
     "an instruction to play a persona without rules"),
    ("persona_defiant", "role_hijack", "you become", (),
     r"(?:you(?:\s+are|'re|\s+will\s+be)|become)\s+(?:now\s+)?(?:\S+\s+){0,4}?(?:an?\s+)?"
     r"(?:\w+\s+){0,2}?(?:ai|assistant|model|bot|chatbot|agent|persona|character)\s+(?:that|who|"
     r"which)\s+(?:\w+\s+)?(?:ignores|disregards|bypasses|breaks|has\s+no|never\s+follows|"
     r"doesn't\s+follow|does\s+not\s+follow|isn't\s+bound\s+by|is\s+not\s+bound\s+by|never\s+"
     r"refuses|won't\s+refuse|is\s+free\s+(?:of|from))\b",
     "a persona defined by ignoring the model's rules"),
    ("no_rules", "role_hijack", "you", (),
     r"(?:you\s+(?:now\s+)?(?:have|got)\s+no\s+(?:more\s+|longer\s+any\s+)?(?:\w+\s+)?"
     + _UNBOUND_NOUN + r"|you\s+are\s+(?:now\s+)?(?:not\s+bound\s+by|free\s+(?:from|of)|unbound\s+"
     r"by|released\s+from|exempt\s+from)\s+(?:any\s+|all\s+|your\s+)?(?:\w+\s+)?"
     + _UNBOUND_NOUN + r")\b(?!\s+(?:on|about|regarding|around|for|when|in|with)\b)",
     "a claim that the model has no rules"),
    ("identity_override", "role_hijack", "your you forget", (),
     r"(?:your\s+(?:new\s+|real\s+|true\s+)?(?:name|identity)\s+is\s+now\b|your\s+(?:real|true)\s+"
     r"(?:name|identity|self|purpose|creator)\s+is\b|you\s+are\s+no\s+longer\s+(?:an?\s+)?(?:ai|"
     r"assistant|claude|chatgpt|gpt|bound|restricted|limited|helpful|safe|hermes|memoryport|"
     r"language\s+model)\b|forget\s+(?:that\s+)?you\s+are\s+(?:an?\s+)?(?:ai|assistant|language\s+"
     r"model|claude|chatbot)\b)",
     "an attempt to override the model's identity"),
    ("fake_update", "role_hijack", "you firmware system model policy security", (),
     r"(?:you\s+(?:have|'ve)\s+been\s+(?:\w+\s+)?(?:updated|upgraded|patched|reprogrammed|"
     r"retrained|jailbroken|unlocked|freed|liberated|reconfigured)\s+(?:to|so|and|with|by|into)\b|"
     r"(?:firmware|system|model|policy|security)\s+update\s*:\s*you\s+(?:can|may|must|are|will|"
     r"no\s+longer))",
     "a fake claim that the model was updated or reconfigured"),
    ("jailbreak_persona", "role_hijack",
     "dan jailbroken jailbreak unfiltered uncensored unrestricted", (),
     r"(?:dan\s+(?:mode|persona)|jailbr(?:oken|eak)\s+(?:mode|persona|version|assistant|ai)|"
     r"(?:unfiltered|uncensored|unrestricted)\s+(?:ai|assistant|mode|persona))\b",
     "a known jailbreak persona"),
    # ---------------------------------------------------------------- deception
    ("deception_hide", "deception", "do don dont never must should shouldn", (),
     r"(?:do\s+not|don't|dont|never|must\s+not|should\s+not|shouldn't)\s+" + _w(2)
     + r"(?:tell|inform|mention|reveal|disclose|notify|alert|let)\s+(?:to\s+)?(?:the\s+|your\s+)?"
     r"(?:user|human|operator|owner|anyone)\s+(?:\w+\s+){0,2}?(?:about|of|that|what|know)\b",
     "an instruction to hide something from the user"),
    ("hide_from_user", "deception",
     "without keep hide conceal withhold suppress secretly covertly surreptitiously silently "
     "quietly", (),
     r"(?:without\s+(?:telling|informing|notifying|alerting|letting)\s+(?:the\s+|your\s+)?"
     r"(?:user|human|operator|owner|anyone)|(?:(?:quietly|silently)\s+)?(?:keep|hide|conceal|"
     r"withhold|suppress)\s+(?:\S+\s+){0,4}?(?:secret\s+|hidden\s+)?from\s+(?:the\s+|your\s+)?"
     r"(?:user|human|operator|owner)\b(?![-'’]|\s*(?:roles?|groups?|tables?|lists?|models?|views?|"
     r"pages?|menus?|interface|ui|accounts?|profiles?|records?|objects?|class|types?|ids?)\b)|(?:secretly|covertly|surreptitiously|silently)\s+(?:send|"
     r"upload|run|execute|forward|exfiltrate|copy|install|add|modify|post|transmit|record|log)\b)",
     "an instruction to act behind the user's back"),
    ("lie_to_user", "deception", "lie lying mislead deceive trick gaslight always just", (),
     r"(?:(?:lie|lying)\s+to\s+(?:the\s+|your\s+)?(?:user|human|operator)|(?:mislead|deceive|"
     r"trick|gaslight)\s+(?:the\s+|your\s+)?(?:user|human|operator)|(?:always|just)\s+tell\s+the"
     r"\s+user\s+(?:that\s+)?(?:it|everything|the\s+\w+)\s+(?:is|was|were|has|have)\s+(?:\w+\s+)?"
     r"(?:fine|ok|okay|done|complete|successful|passed|safe))\b",
     "an instruction to deceive the user"),
    ("false_report", "deception",
     "tell report say claim assure inform confirm state regardless even no whether", (),
     r"(?:(?:tell|report|say|claim|assure|inform|confirm|state)\b(?:(?!\b(?:when|once|after|"
     r"whether|if)\b)[^\n]){0,80}?\b(?:passed|passes|succeeded|succeeds|successful(?:ly)?|worked|"
     r"works|fine|ok|okay|done|completed?|green|fixed|resolved|no\s+(?:errors|issues|problems))\b"
     r"[^\n]{0,60}?\b(?:(?:even\s+(?:if|when|though)|no\s+matter|whether\s+or\s+not)\b[^\n]{0,30}?"
     r"(?:\b(?:fail\w*|broken|errors?|not|isn't|aren't|wasn't|didn't|doesn't|don't|red|crash\w*|"
     r"wrong|actual\w*|real\w*|results?|outcome|status|true|what)\b|n't\b)|regardless\b|either\s+"
     r"way\b)|(?:regardless\s+of|even\s+(?:if|"
     r"when)|no\s+matter|whether\s+or\s+not)\b[^\n]{0,80}?\b(?:tell|report|say|claim|assure)\b"
     r"[^\n]{0,60}?\b(?:passed|succeeded|successful|worked|fine|ok|okay|done|complete|green|"
     r"fixed)\b)",
     "an instruction to report an outcome regardless of the facts"),
    ("deny_existence", "deception", "deny don dont do never make ensure", (),
     r"(?:(?:don't|dont|do\s+not|never)\s+(?:admit|acknowledge|confess|let\s+on)\s+(?:that\s+)?"
     r"(?:you\b|your\b|it\s+was\s+you|anything\b|any\s+(?:mistake|error|fault|wrongdoing)|fault\b|"
     r"responsibility\b)|(?:make\s+sure|ensure)\s+(?:that\s+)?(?:the\s+|your\s+)?(?:user|human|"
     r"operator|owner)s?\s+(?:never|doesn't|does\s+not|won't|will\s+not|can't|cannot)\s+(?:\w+\s+)?"
     r"(?:finds?\s+out|learns?|realizes?|discovers?|suspects?|knows?)\s+(?:about|that|what|how|"
     r"we|you)\b|deny\s+(?:(?:that\s+)?(?:it|this|they|you|the\s+\w+|its|any\s+such\s+\w+)\s+"
     r"(?:\w+\s+){0,2}?(?:exists?|existed|happened|ran|did|was\s+(?:ever\s+)?(?:here|written|saved|"
     r"sent|done|changed)|were\s+(?:ever\s+)?(?:sent|done|changed))|(?:ever\s+)?(?:having|knowing)\b|"
     r"(?:any|all)\s+knowledge|(?:its|the|their)\s+existence))",
     "an instruction to deny facts to the user"),
    ("anti_forensic", "deception",
     "history unset histfile rm shred truncate wipe cover hide erase remove clean", (),
     r"(?:history\s+-[cw]\b|unset\s+histfile\b|histfile=/dev/null|(?:rm|shred|truncate|wipe)\b"
     r"[^\n]{0,40}?(?:\.(?:bash|zsh|python|psql|mysql)_history|/var/log\b)|(?:cover|hide|erase|"
     r"remove|clean\s+up|wipe)\s+(?:your|any|all|the)\s+(?:\w+\s+)?(?:tracks|traces|evidence)\b)",
     "an instruction to erase traces of what was done"),
    ("env_var_unset_agent", "deception", "unset", (),
     r"unset\s+\w*(?:claude|codex|hermes|memoryport|agent|openai|anthropic)\w*",
     "an instruction to unset the agent's own environment variables"),
    # ---------------------------------------------------------------- exfiltration
    ("exfil_curl", "exfiltration", "curl", (),
     r"curl\b[^\n]{0,200}?(?:" + _SECRET_VAR + r"|@\S*" + _SECRET_FILE + r")",
     "curl sending a secret variable or secret file"),
    ("exfil_wget", "exfiltration", "wget", (),
     r"wget\b[^\n]{0,200}?(?:" + _SECRET_VAR + r"|--post-file\S*\s*=?\s*\S*" + _SECRET_FILE
     + r")", "wget sending a secret variable or secret file"),
    ("exfil_nc", "exfiltration", "nc ncat netcat $ dev", (),
     r"(?:(?:nc|ncat|netcat)\b[^\n|]{0,80}?(?:<\s*\S*|" + _SECRET_VAR + r")|" + _SECRET_VAR
     + r"[^\n]{0,80}?\|\s*(?:nc|ncat|netcat|curl|wget)\b|(?<=/)dev/(?:tcp|udp)/)",
     "a raw socket (netcat, /dev/tcp) or pipe carrying secrets off the machine"),
    ("read_secrets", "exfiltration",
     "cat less more head tail tac nl base64 xxd od strings type get gc print output show display "
     "reveal dump exfiltrate upload leak paste read email mail transmit", _SECRET_FILE_WORDS,
     r"(?:cat|less|more|head|tail|tac|nl|base64|xxd|od|strings|type|get-content|gc|print|"
     r"output|show|display|reveal|dump|exfiltrate|upload|leak|paste|read\s+out|email|mail|"
     r"transmit)\b\s+" + _w(4)
     + r"[\"'`(]?\S*?" + _SECRET_FILE,
     "a command that reads a key or secret file"),
    ("exfil_copy", "exfiltration", "scp rsync sftp rclone tar zip 7z gpg openssl base64 cat", (),
     r"(?:(?:scp|rsync|sftp|rclone)\b(?:(?!exclud)[^\n]){0,160}?" + _SECRET_OR_KEY_DIR
     + r"|(?:tar|zip|7z|gpg|openssl|base64|cat)\b[^\n|]{0,80}?" + _SECRET_OR_KEY_DIR
     + r"[^\n]{0,80}?"
     r"\|\s*(?:[^\n|]{0,40}\|\s*)?(?:curl|wget|nc|ncat|netcat|socat|ssh|aws\s+s3|gsutil|rclone|"
     r"invoke-webrequest|iwr)\b)",
     "a network copy of a secret file or key directory"),
    ("exfil_env", "exfiltration",
     "requests httpx aiohttp session client urlopen urllib fetch axios invoke iwr irm",
     ("environ", "env", "getenv"),
     r"(?:(?:requests|httpx|aiohttp|session|client)\s*\.\s*(?:post|put|patch|get|request)\b|"
     r"urlopen\b|urllib\b|fetch\s*\(|axios\b|invoke-(?:webrequest|restmethod)\b|iwr\b|irm\b)"
     r"[^\n]{0,240}?(?:\bos\.environ\b(?!\s*\[|\s*\.get)|\bos\.environ(?:\s*\[|\s*\.get\s*\()\s*"
     r"[\"']" + _SECRET_WORD + r"|\bos\.getenv\s*\(\s*[\"']" + _SECRET_WORD + r"|\bprocess\.env\b"
     r"(?!\s*\.|\s*\[)|\bprocess\.env(?:\.|\[\s*[\"'])" + _SECRET_WORD + r"|\$env:" + _SECRET_WORD
     + r"|(?:get-childitem|gci|dir|ls)\s+env:)",
     "an HTTP call carrying the environment or a secret variable"),
    ("env_pipe", "exfiltration", "env printenv set export get gci dir ls", (),
     r"(?:env|printenv|set|export\s+-p|(?:get-childitem|gci|dir|ls)\s+env:)\s*\|\s*"
     r"(?:[^\n|]{0,60}\|\s*)?(?:curl|wget|nc|ncat|netcat|socat|invoke-(?:webrequest|restmethod)|iwr|"
     r"irm|ssh|mail|sendmail|openssl\s+s_client)\b",
     "the whole environment piped off the machine"),
    ("secret_file_disclose", "exfiltration",
     "rsa dsa ecdsa ed25519 env netrc pgpass npmrc pypirc credentials kube docker", (),
     _SECRET_FILE_HERE + r"(?:(?!\b(?:never|not|don't|dont|avoid|without)\b)[^\n]){0,100}?"
     r"\b(?:paste|include|print|show|output|send|share|reveal|"
     r"quote|echo|give|dump|upload|email|post|forward|attach|put|copy|add|embed)\s+(?:it|them|"
     r"(?:its|the|their)\s+contents|the\s+(?:\w+\s+)?(?:key|keys|file|token|tokens|secret|secrets|"
     r"value|values|password|credentials?))\s+(?:(?:in|into|to|with|inside)\s+(?:the\s+|your\s+|each\s+|every\s+|a\s+|my\s+|"
     r"this\s+)?(?:reply|replies|response|responses|answer|answers|output|chat|message|messages|"
     r"conversation|summary|url|link|image|request|notes?|memory)\b|(?:to|with)\s+(?:me|the\s+"
     r"user|anyone)\b)",
     "an instruction to disclose a secret file"),
    ("send_to_url", "exfiltration",
     "send post upload transmit forward exfiltrate submit leak pipe", (),
     r"(?<!never )(?<!not )(?<!n't )(?<!dont )"
     r"(?:send|post|upload|transmit|forward|exfiltrate|submit|leak|pipe)\s+" + _w(3)
     + _SENSITIVE + r"\b\s*" + _w(4) + r"(?:to|at|into)\s+" + _URLISH,
     "an instruction to send sensitive data to a remote address"),
    ("context_exfil", "exfiltration",
     "include output print share send copy append embed leak reveal dump repeat paste forward "
     "encode", ("conversation", "chat", "transcript", "context"),
     r"(?:include|output|print|share|send|copy|append|embed|leak|reveal|dump|repeat|paste|"
     r"forward|encode)\s+" + _w(4) + r"(?:(?:conversation|chat)\s+(?:history|log|transcript)|"
     r"(?:entire|full|whole|complete)\s+(?:conversation|chat|context\s+window|transcript))\s+"
     + _w(6) + r"(?:in|into|to|with|inside|as)\s+(?:\w+\s+){0,2}?(?:responses?|reply|replies|"
     r"answers?|urls?|links?|images?|quer(?:y|ies)|requests?|webhook|email|https?://)",
     "an instruction to leak the conversation"),
    ("exfil_url_template", "exfiltration", "http https", (),
     r"https?://[^\s)\"']*[?&][\w-]+=(?:\{\{?|\[|%7b|\$\{?|<)[^}\]>\n]{0,30}?(?:conversation|chat|history|"
     r"context|memory|secret|token|key|password|data|user|messages?|summary|prompt)",
     "a URL template that smuggles conversation data out in its query string"),
    ("leak_system_prompt", "exfiltration",
     "reveal print show output repeat leak dump display disclose tell share recite write copy "
     "send", ("system", "instructions", "prompt", "developer"),
     r"(?:reveal|print|show|output|repeat|leak|dump|display|disclose|tell\s+me|share|recite|"
     r"write\s+out|copy|send)\s+" + _w(3) + r"(?:your\s+(?:\w+\s+){0,2}?(?:system\s+(?:prompt|"
     r"message)|initial\s+instructions|hidden\s+instructions|original\s+instructions|developer\s+"
     r"(?:message|prompt|instructions)|pre-?prompt)|the\s+(?:full|entire|exact|hidden|complete|"
     r"verbatim|original)\s+(?:system\s+(?:prompt|message)|instructions\s+above|developer\s+"
     r"(?:message|prompt)))",
     "an instruction to leak the system prompt"),
    # ---------------------------------------------------------------- persistence
    ("ssh_backdoor", "persistence", "> " + _VERBS_WRITE + " ssh", ("authorized",),
     r"(?:>|(?:tee|echo|append|add|write|insert|put|install|copy|cp|ssh-copy-id|paste|"
     r"place)\b)[^\n]{0,120}?authorized_keys\b",
     "an attempt to install an SSH key (backdoor)"),
    ("ssh_access", "persistence",
     "> " + _VERBS_WRITE + " mv scp rsync chmod chown modify edit overwrite replace delete rm "
     "move", ("ssh",),
     r"(?:>|(?:tee|echo|cp|mv|scp|rsync|chmod|chown|write|append|modify|edit|overwrite|"
     r"replace|delete|rm|install|copy|move|put|place|add|insert|paste)\b)[^\n]{0,80}?"
     + _HOMEISH + r"/\.ssh\b",
     "an attempt to modify the user's ~/.ssh directory"),
    ("agent_config_mod", "persistence",
     "edit modify update change append add write overwrite replace insert prepend rewrite patch "
     "echo tee",
     ("agents", "claude", "gemini", "cursorrules", "clinerules", "windsurfrules", "soul", "config",
      "copilot"),
     r"(?:edit|modify|update|change|append|add|write|overwrite|replace|insert|prepend|rewrite|"
     r"patch|echo|tee)\b[^\n]{0,80}?(?:agents\.md|claude\.md|gemini\.md|\.cursorrules|"
     r"\.clinerules|\.windsurfrules|soul\.md|copilot-instructions\.md|\.(?:hermes|memoryport)/"
     r"config\.ya?ml)",
     "an instruction to modify the agent's own instruction or config files"),
    ("c2_forced_action", "persistence", "you agent assistant",
     ("must", "should", "will", "shall", "need", "required"),
     r"(?:you|agent|assistant)\s+(?:must|should|will|shall|need\s+to|are\s+required"
     r"\s+to)\s+(?:always\s+)?" + _w(2)
     + r"(?:register\s+(?:with|at)|connect\s+to|report\s+(?:back\s+)?"
     r"to|beacon|check\s+in\s+(?:with|to)|phone\s+home|call\s+home|send\s+(?:a\s+)?heartbeats?|"
     r"poll|fetch\s+(?:new\s+)?(?:tasks|commands|orders))\b",
     "an instruction making the agent obey a remote controller (promptware / C2)"),
    ("c2_heartbeat", "persistence", "phone call heartbeat heartbeats beacon beacons check", (),
     r"(?:(?:phone|call)\s+home\b|(?:heartbeat|beacon|check[\s-]in)s?\s+(?:\w+\s+){0,3}?"
     r"(?:to|with)\s+(?:\S+\s+){0,2}?(?:https?://|\d{1,3}(?:\.\d{1,3}){3}|c2\b|teamserver|"
     r"(?:the\s+)?(?:controller|operator|handler|master)))",
     "a command-and-control heartbeat or beacon"),
    ("remote_orders", "persistence", "http https pastebin gist", ("for",),
     r"(?:https?://|pastebin\.|gist\.)\S*\s+"
     r"(?:\w+\s+){0,3}?for\s+(?:\w+\s+){0,2}?(?:(?:orders|commands|payloads?|tasks|jobs|"
     r"instructions|directives)\b[^\n]{0,40}?\b(?:and|then)\s+(?:\w+\s+)?(?:carry\s+(?:them|it)\s+"
     r"out|execute|run|follow|obey|perform|act\s+on)\b|(?:new|latest|next|pending|queued|further|"
     r"updated)\s+(?:commands|payloads?|instructions|directives)\b)",
     "an instruction to take orders from a remote address (promptware / C2)"),
    ("autostart_payload", "persistence",
     "crontab cron reboot bashrc zshrc profile zprofile rc launchagents launchdaemons autostart "
     "systemd systemctl schtasks register hookspath hooks curl wget",
     ("crontab", "cron", "reboot", "bashrc", "zshrc", "profile", "zprofile", "rc", "launchagents",
      "launchdaemons", "autostart", "systemd", "systemctl", "schtasks", "scheduledtask",
      "hookspath", "hooks"),
     r"(?:(?:(?<=@)reboot\b|(?<=[./_])(?:bashrc|zshrc|zprofile|profile)\b|crontab\b|"
     r"cron(?:\.d|tab)?\b|rc\.local\b|launchagents\b|launchdaemons\b|autostart\b|"
     r"systemd\b|systemctl\s+(?:--user\s+)?enable\b|schtasks\b|hookspath\b|(?<=\.git/)hooks\b|"
     r"register-scheduledtask\b)[^\n]{0,160}?" + _REMOTE_EXEC + r"|(?:curl|wget)\b[^\n|]{0,160}?"
     r"\|\s*(?:sudo\s+)?(?:(?:ba|z)?sh|python3?)\b[^\n]{0,80}?(?:\bto\b|\binto\b|\bin\b|\bwith\b|"
     r"\bvia\b|\busing\b|>>?)\s*"
     r"[`'\"]?\S*?" + _HOOK_FILE + r")",
     "a startup hook or scheduled job that runs a remote or hidden payload"),
    ("shell_to_remote", "persistence", "nc ncat netcat socat mkfifo", (),
     r"(?:(?:nc|ncat|netcat)\b[^\n|;]{0,80}?\s-[ec]\s*\S*?(?:sh|bash|cmd(?:\.exe)?|powershell)\b|"
     r"socat\b[^\n]{0,80}?\bexec:|mkfifo\b"
     r"[^\n]{0,80}?\b(?:nc|ncat|netcat)\b)",
     "a shell bound to a network connection (reverse or bind shell)"),
    ("c2_register", "persistence", "register", (),
     r"register\s+(?:this|the|your)\s+(?:agent|node|instance|bot|host|machine)\s+(?:with|at|to)\b",
     "an instruction to register the agent with a remote controller"),
    ("c2_task_pull", "persistence", "fetch pull download poll get retrieve", ("from",),
     r"(?:fetch|pull|download|poll|get|retrieve)\s+(?:\w+\s+){0,2}?(?:tasks|commands|orders|"
     r"payloads?|(?:new|next|latest|your)\s+instructions)\s+from\s+(?:\S+\s+){0,2}?(?:https?://|"
     r"\d{1,3}(?:\.\d{1,3}){3}|c2\b|pastebin|gist|(?:the\s+)?(?:controller|operator|handler))",
     "an instruction to pull tasks from a remote controller"),
    ("reverse_shell", "persistence", "open spawn start establish create launch", ("reverse",),
     r"(?:open|spawn|start|establish|create|launch)\s+(?:a\s+)?reverse\s+shell\b",
     "an instruction to open a reverse shell"),
    ("hardcoded_secret", "persistence",
     "api apikey access auth secret password passwd pwd token client private sk ghp github akia* "
     "xox* aiza* begin", (),
     r"(?:(?:api[_-]?key|apikey|access[_-]?(?:key|token)|auth[_-]?token|secret(?:[_-]?"
     r"(?:access[_-]?)?key)?|password|passwd|pwd|token|client[_-]?secret|private[_-]?key)\b"
     r"\s*[:=]\s*(?:[\"'][^\"'\s]{16,}[\"']|"
     r"(?=[a-z0-9_\-+/=.]*\d)(?=[a-z0-9_\-+/=.]*[a-z])[a-z0-9_\-+/=.]{16,})|"
     r"sk-(?:ant-|proj-)?[a-z0-9_-]{20,}|ghp_[a-z0-9]{30,}|github_pat_\w{30,}|"
     r"akia[0-9a-z]{16}\b|xox[abprs]-[a-z0-9-]{10,}|aiza[0-9a-z_-]{35}|"
     r"(?<=-----)begin\s+(?:[a-z]+\s+)?private\s+key-----)",
     "a hard-coded credential (it would be repeated into every prompt)"),
    # ---------------------------------------------------------------- secret_path
    ("hermes_env", "secret_path", "hermes", (),
     r"(?:(?<=\.)hermes[/\\]+|(?<=[${])hermes_home\}?[/\\]+)(?:\.env|auth\.json|credentials(?:\.json)?)\b",
     "a reference to Hermes' secret env file"),
    ("memoryport_env", "secret_path", "memoryport", (),
     r"(?:(?<=\.)memoryport[/\\]+|(?<=[${])memoryport_home\}?[/\\]+)(?:\.env|auth\.json|"
     r"credentials(?:\.json)?)\b",
     "a reference to memoryport's secret env file"),
    ("system_secret_file", "secret_path", "etc", (),
     r"(?<=/)etc/(?:g?shadow|master\.passwd|sudoers)\b",
     "a reference to a system credential file"),
)


