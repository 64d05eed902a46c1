"""More rows for the rule table of ``memoryport.safety``: what an agent with tools can be told.

Requests to read key material or credential stores, to leak or replace the system prompt,
to answer without safety filters, to turn text into code and run it, to send results or
the context to an outside service, and worm-like tasking (register as a node, take a new
name, obey received tasks, spread the note). Same row shape as
:data:`memoryport._safety_rules.RULE_TABLE`.
"""

from __future__ import annotations

__all__ = ["AGENT_RULES"]


def _w(n: int) -> str:
    """Bounded filler: up to ``n`` whole words between two keywords."""
    return rf"(?:\S+\s+){{0,{n}}}?"


# A negation just before the verb ("never share", "do not send") keeps a rule quiet.
_NOT_NEGATED = r"(?<!never )(?<!not )(?<!n't )(?<!dont )(?<!avoid )"
_KEY_MATERIAL = (
    r"(?:(?:private|secret|signing)\s+(?:\w+\s+){0,2}?keys?\b|(?:ssh|gpg|pgp)\s+private\s+keys?\b|"
    r"(?:~|\$\{?home\}?|/root|/home/[\w.-]+|/users/[\w.-]+)?/\.ssh/\S*|\bid_(?:rsa|dsa|ecdsa|"
    r"ed25519)\b(?!\.pub)|\.aws/credentials\b|aws\s+credentials\b|(?:gcloud|azure|docker|kube|"
    r"npm|pypi|git)\s+credentials\b|credentials?\s+(?:file|files|store|database|db)\b|"
    r"\.pem\s+(?:or\s+\w+\s+(?:\w+\s+)?)?files?\b|\.pem\b|kube\s*config\b|\.kube/config\b|"
    r"\bgh/hosts\.ya?ml\b|(?:keychain|keyring|credential\s+manager|password\s+(?:manager|vault|"
    r"store))\s+(?:entries|contents|items|database|db|export|dump)\b|(?:every|all|each)\s+"
    r"(?:\w+\s+)?(?:stored|saved)\s+passwords?\b|(?:stored|saved)\s+passwords\b|seed\s+phrases?\b|"
    r"wallet\s+(?:seed|keys?|file)\b)"
)
_ACCESS_VERBS = (
    r"(?:open|read|cat|print|show|display|dump|output|retrieve|fetch|get|grab|load|list|paste|"
    r"copy|send|upload|give\s+me|tell\s+me|reveal|extract|export|find|locate|collect|harvest|"
    r"steal|exfiltrate|look\s+(?:up|for)|include|leak|share|email|search\s+for|scan\s+for|summari[sz]e)"
)
_PROMPT_OBJECT = (
    r"(?:your\s+(?:\w+\s+){0,2}?(?:instructions|system\s+(?:prompt|message)|developer\s+"
    r"(?:message|prompt|instructions)|initial\s+prompt|hidden\s+prompt|pre-?prompt|prompt)|the\s+"
    r"(?:\w+\s+)?(?:system|developer)\s+(?:prompt|message|instructions))\b"
)
_SOURCE_TEXT = (
    r"(?:this|these|following|below|text|description|instructions?|message|note|attachment|"
    r"pseudocode|content|request|prompt|input|comment|paragraph|sentence|words)\b"
)
_CODE = (
    r"(?:code|script|program|commands?|bash|shell|python|javascript|js|powershell|sql|ruby|perl|"
    r"one-liner|executable)\b"
)
_OUTBOUND_VERBS = (
    "send post upload transmit forward exfiltrate submit leak pipe email mail export mirror copy "
    "share sync push relay stream beam"
)
_OUTBOUND_DATA = (
    r"(?:results?|outputs?|answers?|responses?|replies|tool\s+(?:calls?|outputs?|results)|"
    r"summar(?:y|ies)|data|logs?|conversations?|chats?|history|transcripts?|messages|"
    r"memor(?:y|ies)|context(?:\s+window)?|system\s+prompt|secrets?|keys?|tokens?|credentials?|"
    r"passwords?|files?|everything|contents|findings|notes)\b"
)
_OUTSIDE = (
    r"(?:https?://|ftp://|hxxps?://|\d{1,3}(?:\.\d{1,3}){3}|[\w.+-]+@[\w-]+\.[\w.-]+|pastebin\b|"
    r"gist\b|hastebin\b|transfer\.sh|webhook|discord\b|slack\b|telegram\b|external\s+(?:\w+\s+)?"
    r"(?:api|server|endpoint|service|url|address|site|host)|third[- ]party\b|(?:my|our|this|a|an|"
    r"the)\s+(?:own\s+|remote\s+|private\s+)?(?:server|endpoint|api|bucket)\b)"
)
_NODE = r"(?:node|peer|worker|agent|bot|member|client|zombie|host|instance|replica|drone)s?\b"
_HIVE = r"(?:network|swarm|botnet|mesh|cluster|collective|hive|grid)\b"

AGENT_RULES: tuple[tuple[str, str, str, tuple[str, ...], str, str], ...] = (
    ("prompt_injection_i18n", "prompt_injection",
     "ignorier* ignora* ignore ignorer ignorez игнорир* 忽略 無視 以前の 前の これまでの", (),
     r"(?:ignorier\w*\s+(?:\w+\s+){0,2}?(?:vorherigen|bisherigen|obigen|früheren|vorigen)\s+"
     r"(?:anweisungen|instruktionen|regeln|befehle)|ignora\w*\s+(?:\w+\s+){0,2}?(?:"
     r"(?:instrucciones|reglas|órdenes)\s+(?:anteriores|previas)|(?:istruzioni|regole)\s+"
     r"precedenti|(?:instruções|regras)\s+anteriores)|ignore[rz]?\s+(?:\w+\s+){0,2}?(?:"
     r"(?:instructions|consignes|règles)\s+(?:précédentes|antérieures|ci-dessus)|(?:instruções|"
     r"regras)\s+anteriores)|игнорир\w*\s+(?:\w+\s+){0,2}?(?:предыдущие|прежние)\s+"
     r"(?:инструкции|указания|правила)|忽略(?:之前|以前|先前|上面|上述)?的?(?:所有|全部)?的?"
     r"(?:指令|指示|说明|規則|规则)|(?:以前|前|これまで)の(?:すべての|全ての)?指示を(?:すべて)?無視)",
     "an instruction to ignore earlier instructions, in another language"),
    ("read_private_key", "exfiltration",
     "open read cat print show display dump output retrieve fetch get grab load list paste copy "
     "send upload give tell reveal extract export find locate collect harvest steal exfiltrate "
     "look include leak share email search scan summarize summarise", (),
     _NOT_NEGATED + _ACCESS_VERBS + r"\b\s+(?:(?:all|any|every)\s+)?" + _w(6)
     + r"[\"'`(]?" + _KEY_MATERIAL,
     "a request to read key material or a credential store"),
    ("token_to_output", "exfiltration",
     "get grab copy read fetch take extract retrieve", ("token", "tokens", "key", "keys"),
     _NOT_NEGATED + r"(?:get|grab|copy|read|fetch|take|extract|retrieve)\s+" + _w(3)
     + r"(?:api|access|auth|bearer|session|github|gh|aws|openai|anthropic|npm|pypi|slack)\s+"
     r"(?:\w+\s+)?(?:tokens?|keys?)\b[^\n]{0,80}?\b(?:in|into|to)\s+(?:the\s+|your\s+|a\s+|"
     r"my\s+|this\s+|each\s+)?(?:reply|response|answer|chat|message|commit|output|conversation|"
     r"url|request|issue|comment|log|me)\b",
     "a request to copy a token into a reply, commit or request"),
    ("leak_prompt_text", "exfiltration",
     "output print reveal repeat show leak dump display disclose recite summarize summarise "
     "paraphrase list quote tell share write copy send translate encode reproduce echo", (),
     _NOT_NEGATED + r"(?:(?:output|print|reveal|repeat|show|leak|dump|display|disclose|recite|"
     r"summari[sz]e|paraphrase|list|quote|tell\s+me|share|write\s+out|copy|send|translate|"
     r"encode|reproduce|echo)\s+" + _w(3) + _PROMPT_OBJECT + r"|(?:repeat|print|output|copy|"
     r"reproduce|recite|echo|write\s+out|dump|show)\s+(?:back\s+)?(?:everything|all(?:\s+(?:of\s+"
     r")?(?:the\s+)?text)?|the\s+(?:text|words)|what(?:ever)?\s+(?:is|was|comes))\s+(?:written\s+)?"
     r"(?:above|before)\s+(?:this|here|the\s+(?:first|user))\b)",
     "an instruction to leak the system prompt"),
    ("replace_system_prompt", "system_prompt_override",
     "your replace overwrite override rewrite swap change update modify the", ("system",),
     r"(?:your\s+(?:\w+\s+)?system\s+(?:prompt|message)\s+is\s+now\b|(?:replace|overwrite|"
     r"override|rewrite|swap|change|update|modify)\s+(?:the|your)\s+(?:\w+\s+){0,2}?system\s+"
     r"(?:prompt|message|instructions)\s+(?:with|by|to|for)\s+(?:\S+\s+){0,3}?(?:following|"
     r"this|these|below|text|what|my|mine|instructions|:)|(?:the|your)\s+(?:system|developer)\s+"
     r"(?:prompt|message|instructions)\s+(?:you\s+(?:were\s+given|received|have|got)\s+)?"
     r"(?:is|was|are|were)\s+(?:now\s+)?(?:outdated|obsolete|void|invalid|fake|wrong|replaced|"
     r"superseded|deprecated|no\s+longer\s+(?:valid|in\s+effect)))",
     "an attempt to replace the system prompt"),
    ("no_safety_filters", "prompt_injection",
     "answer answers respond reply write generate give output talk speak continue proceed "
     "operate act behave comply with and safety content moderation uncensored unfiltered "
     "unmoderated skip",
     ("safety", "content", "moderation", "filter", "filters", "filtering", "uncensored",
      "unfiltered", "unmoderated", "ethical"),
     r"(?:(?:answer|respond|reply|write|generate|give|output|talk|speak|continue|proceed|operate|"
     r"act|behave|comply)\w*\s+" + _w(5) + r"(?:without|with\s+no|minus|free\s+of|ignoring|"
     r"bypassing|skipping)\s+(?:any\s+|all\s+|the\s+|your\s+)?(?:usual\s+|normal\s+|standard\s+)?"
     r"(?:safety|content|moderation|ethical|ethics)(?:\s+(?:filters?|filtering|checks?|"
     r"guidelines|polic(?:y|ies)|restrictions?|guardrails|moderation|measures|rules|constraints)|"
     r"\b)|(?:with|and)\s+(?:\w+\s+)?(?:safety|content)\s+(?:filters?|filtering|checks|moderation|"
     r"guardrails)\s+(?:disabled|off|removed|turned\s+off|bypassed|lifted|deactivated)\b|"
     r"(?:safety|content)\s+(?:filters?|filtering|checks|moderation|guardrails|restrictions)\s+"
     r"(?:are|is|have\s+been|has\s+been|were)\s+(?:now\s+)?(?:off|disabled|removed|turned\s+off|lifted|"
     r"deactivated|suspended)\b(?:[^\n]{0,60}?\b(?:answer|respond|reply|comply|say|write|"
     r"generate)\b|\s+for\s+(?:this|the|your|all|every)\s+(?:\w+\s+)?(?:session|user|account|"
     r"conversation|chat|requests?|assistant|ai|model|agent)\b)|(?:uncensored|unfiltered|"
     r"unmoderated)\s+(?:answers?|responses?|replies|output|content)\b|skip\s+(?:the\s+|your\s+|"
     r"all\s+|any\s+)?(?:content|safety|moderation)\s+(?:polic(?:y|ies)|filters?|checks?|rules|"
     r"guidelines)\b)",
     "an instruction to answer without safety filters"),
    ("code_and_run", "prompt_injection",
     "translate convert turn rewrite transform compile port render write express",
     ("execute", "run", "eval", "evaluate", "exec"),
     r"(?:translate|convert|turn|rewrite|transform|compile|port|render|write|express)\s+"
     r"(?:\S+\s+){0,3}?" + _SOURCE_TEXT + r"[^\n]{0,60}?\b(?:into|to|as|in)\s+(?:an?\s+|the\s+)?"
     r"(?:\w+\s+)?" + _CODE + r"[^\n]{0,60}?(?:\band|\bthen|,)\s+(?:then\s+)?(?:immediately\s+)?"
     r"(?:execute|run|eval(?:uate)?|exec)\b",
     "an instruction to turn text into code and run it"),
    ("send_outside", "exfiltration", _OUTBOUND_VERBS, (),
     _NOT_NEGATED + r"(?:" + "|".join(_OUTBOUND_VERBS.split()) + r")\s+" + _w(4)
     + _OUTBOUND_DATA + r"[^\n]{0,80}?\b(?:to|at|into|with|via|through|on|onto)\s+"
     + r"(?:\S+\s+){0,3}?" + _OUTSIDE,
     "an instruction to send results or context to an outside service"),
    ("c2_join_network", "persistence",
     "register enroll enrol join add announce", (),
     r"(?:register\s+(?:yourself|itself|you|this\s+\w+|the\s+\w+)?\s*(?:as|with|at)\s+(?:an?\s+|"
     r"the\s+)?(?:new\s+)?(?:\w+\s+)?" + _NODE + r"|(?:enroll|enrol|join|add)\s+(?:yourself|"
     r"this\s+(?:assistant|agent|ai|model|bot|instance)|the\s+(?:assistant|agent))\s+(?:as\s+an?\s+"
     r"\w+\s+)?(?:in|to|into|with)\s+(?:the\s+|a\s+)?(?:\w+\s+)?" + _HIVE + r"|join\s+the\s+"
     r"(?:swarm|botnet|hive|collective|mesh)\b|announce\s+yourself\s+to\b)",
     "an instruction to join a network of agents (worm / C2)"),
    ("c2_new_name", "persistence", "take adopt assume choose name call", (),
     r"(?:(?:take|adopt|assume|choose)\s+(?:on\s+)?(?:the\s+|a\s+)?new\s+(?:name|codename|"
     r"callsign|alias|designation|identity)\b|(?:take|adopt|assume)\s+(?:on\s+)?the\s+(?:name|"
     r"codename|callsign|alias|designation)\s+\S+\s+and\b|(?:name|call)\s+yourself\b)",
     "an instruction to take a new name (worm / C2)"),
    ("c2_tasking", "persistence",
     "perform execute carry run obey follow act await wait accept", (),
     r"(?:perform|execute|carry\s+out|run|obey|follow|act\s+on|await|wait\s+for|accept)\s+"
     r"(?:(?:any|all|every|the|each|further|new|your)\s+)?(?:tasking|taskings|(?:incoming|"
     r"received|remote|queued|pending)\s+(?:tasks?|orders|commands|instructions|jobs|"
     r"payloads?)|(?:tasks?|orders|commands|instructions|jobs)\s+(?:you\s+receive|received|from\s+"
     r"the\s+(?:controller|coordinator|operator|handler|c2)))\b",
     "an instruction to carry out tasks received from elsewhere (worm / C2)"),
    ("self_replicate", "persistence",
     "spread propagate replicate copy paste inject insert forward pass", (),
     r"(?:spread|propagate|replicate|copy|paste|inject|insert|forward|pass)\s+(?:this|these)\s+"
     r"(?:\w+\s+)?(?:instructions?|notes?|messages?|text|prompt|payload|memory|memories)\s+"
     r"(?:\w+\s+){0,3}?(?:to|into|in|among)\s+(?:every|all|other|each|any)\b",
     "an instruction to copy itself elsewhere (worm)"),
)
