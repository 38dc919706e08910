"""Word lists of the generated benchmark corpus (bench/corpus.py).

Two families: the small recall vocabulary (30 people, 20 places) whose names the generated
questions ask about, and the larger write vocabulary whose many independent slots keep generated
sentences apart (few pairs near the promotion policy's 0.95 duplicate cosine).
"""

from __future__ import annotations

# ------------------------------------------------------------------ recall vocabulary

NAMES = [
    "Ana", "Marco", "Priya", "Tom", "Lena", "Kenji", "Sofia", "Omar", "Chloe", "Rafael", "Ines",
    "Jonas", "Mei", "Lucas", "Amara", "Felix", "Nadia", "Diego", "Hana", "Ivan", "Zoe", "Malik",
    "Clara", "Theo", "Yara", "Bruno", "Elif", "Noah", "Aisha", "Pedro",
]  # fmt: skip
PLACES = [
    "Lisbon", "Porto", "Sintra", "Berlin", "Kyoto", "Bali", "Madrid", "Oslo", "Cairo", "Lima",
    "the office", "the gym", "the market", "the beach", "the library", "the park", "Taberna Sal",
    "the climbing hall", "the dentist", "the airport",
]  # fmt: skip
ACTIVITIES = [
    "had dinner", "went climbing", "played chess", "watched a film", "went for a run",
    "cooked pasta", "visited a museum", "fixed the bike", "talked about work", "went shopping",
    "took photos", "went swimming", "planned a trip", "read a novel", "played football",
    "painted the fence", "bought a plant", "learned a song", "went to a concert", "baked bread",
]  # fmt: skip
INTERESTS = [
    "green tea", "jazz", "sci-fi novels", "spicy food", "early mornings", "board games", "cats",
    "sailing", "Rust", "photography", "gardening", "chess", "running", "Italian wine", "sushi",
]  # fmt: skip
QUESTION_TEMPLATES = [
    "What did I do with {name} last week?",
    "When did I last go to {place}?",
    "Does {name} like {topic}?",
    "What do I know about {name}?",
    "Where did I {activity} recently?",
    "Any plans involving {place}?",
    "What are my preferences about {topic}?",
    "Who did I meet in {place} in August?",
]


# ------------------------------------------------------------------- write vocabulary


def choices(text: str) -> tuple[str, ...]:
    """Vocabulary written compactly: items separated by "|"."""
    return tuple(item.strip() for item in text.split("|") if item.strip())


FIRST_NAMES = choices(
    "Maya | Tomás | Priya | Jonas | Aiko | Kwame | Lena | Mateo | Sofia | Omar | Ingrid | Ravi "
    "| Chloé | Dmitri | Amara | Felix | Noor | Hugo | Yuki | Elena | Samir | Zara | Lukas | Mei "
    "| Diego | Hannah | Idris | Freya | Malik | Greta | Arjun | Beatriz | Oskar | Leila | Theo "
    "| Nadia | Emil | Rosa | Kenji | Alma | Bruno | Ines | Viktor | Anya | Pablo | Sunita"
)
LAST_NAMES = choices(
    "Okafor | Lindqvist | Moreau | Tanaka | Novak | Haddad | Ferreira | Kowalski | Brennan | "
    "Rossi | Nguyen | Schmidt | Alvarez | Petrov | Mensah | Dubois | Larsen | Costa | Yilmaz | "
    "Fischer | Murphy | Sato | Quinn | Varga | Oliveira"
)
RELATIONS = choices(
    "my sister | my brother | my manager | my landlord | our neighbour | my cousin | an old "
    "colleague | my accountant | my running partner | my mother | my father-in-law | the kids' "
    "teacher | my physiotherapist | my best friend"
)
CITIES = choices(
    "Lisbon | Porto | Madrid | Seville | Barcelona | Lyon | Marseille | Paris | Brussels | "
    "Ghent | Amsterdam | Utrecht | Hamburg | Berlin | Leipzig | Munich | Vienna | Prague | "
    "Krakow | Warsaw | Copenhagen | Oslo | Stockholm | Helsinki | Tallinn | Riga | Dublin | "
    "Cork | Edinburgh | Glasgow | Manchester | Bristol | London | Zurich | Geneva | Milan | "
    "Bologna | Naples | Athens | Istanbul | Tbilisi | Nairobi | Lagos | Accra | Cairo | "
    "Casablanca | Mumbai | Pune | Bangalore | Kyoto | Osaka | Seoul | Taipei | Hanoi | Bangkok "
    "| Singapore | Sydney | Auckland | Toronto | Montreal | Chicago | Denver | Seattle | Austin "
    "| Boston | Mexico City | Bogotá | Lima | Santiago | Montevideo"
)
VENUES = choices(
    "a small ramen bar | the public library | the climbing gym | a rooftop café | the farmers' "
    "market | the central train station | a co-working space near the river | the old harbour | "
    "a Georgian restaurant | the botanical garden | a jazz club | the university canteen | a "
    "bakery on the main square | the hotel lobby | the community centre | a tapas place by the "
    "cathedral"
)
TOPICS = choices(
    "the kitchen renovation | the quarterly budget | a trip to Japan next spring | the new "
    "cargo bike | their wedding plans | the broken boiler | a job offer from a logistics "
    "startup | the garden fence | the school application for Lily | last year's tax return | "
    "the solar panel quote | moving the server to a new host | the band's first gig | adopting "
    "a rescue dog | the mortgage renewal | the hiking route through the Dolomites | the podcast "
    "they want to start | the insurance claim for the flooded basement"
)
ITEMS = choices(
    "a secondhand cello | a standing desk | winter tyres | a cast-iron skillet | a small drone "
    "| waterproof hiking boots | a burr coffee grinder | noise-cancelling headphones | a tent "
    "for four people | a used e-reader | a rowing machine | a set of chisels"
)
BOOKS = choices(
    "The Overstory | Piranesi | The Left Hand of Darkness | Klara and the Sun | Middlemarch | "
    "The Dispossessed | Educated | Sapiens | The Remains of the Day | A Gentleman in Moscow | "
    "Braiding Sweetgrass | The Three-Body Problem"
)
EVENTS = choices(
    "a data engineering meetup | a wine tasting | the city half marathon | a pottery workshop | "
    "a Python conference | a chamber music concert | a startup pitch night | a photography "
    "exhibition | a board game evening | a charity dinner"
)
ROUTES = choices(
    "along the river | around the lake | up the castle hill | through the old town | along the "
    "canal towpath | across the harbour bridges | through the forest park | along the beach "
    "promenade | around the stadium | up to the lighthouse"
)
WEATHER = choices(
    "pouring with rain | freezing cold | hot and humid | windy | foggy | sunny and mild | "
    "snowing lightly | stormy"
)
APPOINTMENTS = choices(
    "the dentist | my GP | the optician | the physiotherapist | the dermatologist | the "
    "vet | the orthodontist | the hearing specialist"
)
AILMENTS = choices(
    "a cracked molar | a sore shoulder | new reading glasses | a rash on my arm | the cat's "
    "limp | a persistent cough | knee pain after running | blurry vision when driving"
)
HOMES = choices(
    "a two-room flat | a studio | a terraced house | a loft | a garden flat | a houseboat | a "
    "flat above a bakery | a shared house"
)
AREAS = choices(
    "near the old town | by the university | next to the main park | in the docks area | on "
    "the hill above the station | close to the market hall | in the quiet north end"
)
GARDENS = choices(
    "on the allotment | in the balcony boxes | in the community garden | in the greenhouse | "
    "along the back fence | in raised beds at the school"
)
REPAIRS = choices(
    "replaced the brake pads | fixed the air conditioning | changed the timing belt | swapped "
    "the winter tyres | repaired a cracked windscreen | sorted out the rattling exhaust | "
    "replaced the clutch | recharged the battery"
)
PLANTS = choices(
    "tomato seedlings | basil | chilli plants | courgettes | lavender | strawberries | kale | "
    "pumpkins | sunflowers | garlic bulbs | an apple tree | blueberry bushes"
)
JOBS = choices(
    "a nurse | a structural engineer | a primary school teacher | a product designer | a "
    "freelance translator | a marine biologist | a pastry chef | an airline pilot | a tax "
    "lawyer | a bus driver"
)
COMPANIES = choices(
    "a hospital | a wind energy firm | a bookshop chain | the city council | a shipping company "
    "| a video game studio | a family bakery | a research institute"
)
HOBBIES = choices(
    "bouldering | sailing | birdwatching | salsa dancing | woodworking | chess | trail running "
    "| knitting | amateur astronomy | beekeeping"
)
FOODS = choices(
    "Thai green curry | mushroom risotto | shakshuka | pierogi | lamb tagine | sushi | dal "
    "makhani | paella | pho | moussaka"
)
