"""A given name's other forms: its common English diminutives and full forms (pure).

People write a friend's name as they call them: "Nathan" of a chat that says "Nate", "Debbie"
for "Deborah", "Bob" for "Robert". No spelling rule finds these (:func:`entity_policy.same_name`
finds "Mohammed" for "Muhhamed"), so recall keeps a table of well-known diminutives, written
from common English usage (not from any dev set's names). A short form is one name's only when
the table says so; one that several full names share ("Sam": Samuel, Samantha) stands for each.
"""

from __future__ import annotations

from collections.abc import Mapping

# Full name: its diminutives and short forms. One line a name.
_TABLE = """
abigail: abby abbie gail
abraham: abe
albert: al bert bertie
alexander: alex alec al sandy xander lex
alexandra: alex alexa sandra sandy lexi
alexis: alex lexi
alfred: alf alfie al fred
alice: ally allie
allison: ally allie
amanda: mandy manda
amelia: amy millie
andrew: andy drew
angela: angie
anthony: tony ant
antonia: toni
arthur: art artie
barbara: barb barbie babs
benjamin: ben benny benji
bernard: bernie
beverly: bev
bradley: brad
bridget: biddy bridie
caroline: carrie caro carol
carolyn: carrie carol
catherine: cathy cat kate katie
cassandra: cassie sandy
charles: charlie chuck chas chaz
charlotte: charlie lottie lotte
christina: chris tina chrissy
christine: chris chrissy tina
christopher: chris kit topher
cynthia: cindy
daniel: dan danny
danielle: dani elle
david: dave davey davy
deborah: deb debbie debby
diana: di
donald: don donny
dorothy: dot dottie dolly
douglas: doug dougie
edward: ed eddie ted teddy ned
eleanor: ellie nell nora
elizabeth: liz lizzie beth betty bess libby eliza elsie lisa elise elisa elsa
emily: em emmy
emma: em emmy
eugene: gene
evelyn: evie
frances: fran frankie
francis: frank frankie
frank: frankie
frederick: fred freddie freddy
gabriel: gabe
gabrielle: gabby gabi
geoffrey: geoff
georgina: gina georgie
gerald: gerry jerry
gregory: greg
harold: harry hal
harriet: hattie
henry: harry hank hal
isabel: izzy bella isa
isabella: izzy bella
jacob: jake
jacqueline: jackie jacqui
james: jim jimmy jamie
janet: jan
jason: jay
jennifer: jen jenny jenn
jeremy: jerry jez
jessica: jess jessie
joanna: jo jojo
joanne: jo
john: johnny jack
jonathan: jon jonny
joseph: joe joey jo
josephine: jo josie
joshua: josh
judith: judy jude
julia: jules julie
katherine: kate katie kathy kat kit
kathleen: kathy kate
kenneth: ken kenny
kimberly: kim kimmy
lawrence: larry laurie
leonard: leo len lenny
lewis: lew lou
louis: lou louie
louise: lou lulu
margaret: maggie meg peggy marge madge greta
matilda: tilly tilda
matthew: matt matty
megan: meg
melanie: mel
melissa: mel missy lissa
michael: mike mikey mick mickey
michelle: shelly chelle
nancy: nan
natalie: nat
nathan: nate nat
nathaniel: nate nat nathan
nicholas: nick nicky
nicole: nikki nicky
oliver: ollie olly
olivia: liv livvy
pamela: pam
patricia: pat patty trish tricia
patrick: pat paddy
peter: pete
philip: phil pip
phillip: phil
rebecca: becky becca
regina: gina
richard: rick ricky dick rich richie
robert: rob robbie bob bobby bert
ronald: ron ronnie
rosemary: rosie
samantha: sam sammy
samuel: sam sammy
sarah: sally sadie
stephanie: steph stephie
stephen: steve stevie
steven: steve stevie
susan: sue susie suzy
suzanne: sue susie suzy
theodore: theo ted teddy
thomas: tom tommy
timothy: tim timmy
valerie: val
victoria: vicky tori
vincent: vince vinny
walter: walt wally
william: will bill billy willy liam
zachary: zach zack
"""


# The table's full names ("steven", "stephen"; not "steve").
FULL_NAMES: set[str] = set()


def _parse(table: str) -> dict[str, frozenset[str]]:
    forms: dict[str, set[str]] = {}
    for line in table.strip().splitlines():
        full, _, short = line.partition(":")
        FULL_NAMES.add(full.strip())
        names = [full.strip(), *short.split()]
        for name in names:
            forms.setdefault(name, set())
        for short_form in names[1:]:
            forms[full.strip()].add(short_form)
            forms[short_form].add(full.strip())
    return {name: frozenset(others) for name, others in forms.items()}


# Name (case-folded) → the names it is another form of: its full forms and, for a full name,
# its short ones. Not transitive: "Sam" is Samuel's and Samantha's, but Samuel is not Samantha.
OTHER_FORMS: Mapping[str, frozenset[str]] = _parse(_TABLE)


def other_forms(name: str) -> frozenset[str]:
    """The names ``name`` (one word, any case) is another form of, case-folded: "Nate" →
    {nathan, nathaniel}; "Deborah" → {deb, debbie, debby}; an unknown name → none."""
    return OTHER_FORMS.get(name.casefold(), frozenset())


def is_given_name(name: str) -> bool:
    """Whether the table holds ``name`` (one word, any case) as a given name or a form of one."""
    return name.casefold() in OTHER_FORMS
